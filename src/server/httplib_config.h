// cpp-httplib as gpupack uses it: Debian's libcpp-httplib.so is built with
// OpenSSL, zlib and Brotli support, and the header must be compiled with the
// same switches (they change class layouts). Include this, never <httplib.h>.
#pragma once

#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif
#include <httplib.h>

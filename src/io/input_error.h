// InputError: bad input, with where and what (defined in util/input_error.h,
// where the bounded file reader also throws it).
#pragma once

#include "util/input_error.h"

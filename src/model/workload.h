// Workload: a list of named pod requests, as read from a trace.
//
// Contract: plain value; the three vectors have one entry per pod.
// `model_keys[i]` is pod i's allowed-model list as the source spelled it
// (FGD's target classes are keyed by it); empty = any model.
#pragma once

#include <string>
#include <vector>

#include "model/request.h"

namespace gpupack {

struct Workload {
  std::vector<std::string> names;
  std::vector<Request> requests;
  std::vector<std::string> model_keys;

  size_t size() const { return requests.size(); }
  // Reorders the pods by name (stable), as the FGD paper's simulator does.
  void sort_by_name();
  int64_t total_gpu_milli() const;
};

}  // namespace gpupack

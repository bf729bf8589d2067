// BindJournal: snapshot mode's durable binds. Without an API server to hold
// a Binding, `gpupack serve --pods-out F` acknowledges a bind only once a
// record of it is on disk (F.journal), and a restart replays the records.
//
// Contract:
// - BindJournal(path) opens (creates) the journal for appending; throws
//   std::runtime_error naming the path when it cannot. As a Binder, bind()
//   appends one line of JSON ({"ns","name","uid","node","gpus"}) and
//   fdatasync()s it before returning ""; any failure returns an error naming
//   the path and errno's text, and the service then undoes the bind and does
//   not acknowledge it. bind_gang() appends every member's record (with
//   "gang": commit id and "of": member count) in one write and one
//   fdatasync. Thread-safe (one mutex; appends are serialised).
// - read_bind_journal(path) returns the records of a journal in order; a
//   missing file is no records; a last line without its newline (a write
//   cut short by a crash: never acknowledged) is skipped; any other line
//   that is not a record is an error naming the path and line number. A
//   gang's records are returned only when all "of" of them are there.
// - apply_bind_records(objects, records) sets spec.nodeName, status.phase
//   Running and the gpupack.io/assigned-gpus annotation (when the record has
//   GPUs) on the pod objects the records name (namespace/name, and the UID
//   when both have one), in record order; returns a message per record it
//   could not apply (no such pod, or bound to another node).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/extender_service.h"

namespace gpupack {

struct BindRecord {
  std::string namespace_name, name, uid, node, gpus;
  std::string gang;      // a gang commit's id ("" = a single bind)
  size_t gang_size = 0;  // records the commit wrote
};

class BindJournal : public Binder {
 public:
  explicit BindJournal(std::string path);
  ~BindJournal() override;
  BindJournal(const BindJournal&) = delete;
  BindJournal& operator=(const BindJournal&) = delete;

  std::string bind(const K8sPod& pod, const std::string& node, const std::string& assigned_gpus) override;
  std::vector<std::string> bind_gang(const std::vector<Item>& items, const std::string& commit_id) override;
  const std::string& path() const { return path_; }

 private:
  std::string append(const std::string& lines);
  std::string path_;
  int fd_ = -1;
  std::mutex mu_;
};

std::vector<BindRecord> read_bind_journal(const std::string& path);
std::vector<std::string> apply_bind_records(std::vector<nlohmann::json>& pod_objects,
                                            const std::vector<BindRecord>& records);

}  // namespace gpupack

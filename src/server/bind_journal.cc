#include "server/bind_journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>

#include "io/kubectl.h"
#include "util/files.h"

namespace gpupack {

namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

BindJournal::BindJournal(std::string path) : path_(std::move(path)) {
  const bool existed = std::filesystem::exists(path_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(fmt::format("{}: cannot open the bind journal: {}", path_, errno_text()));
  if (!existed) sync_parent_dir(path_);  // the new file's name is durable too
}

BindJournal::~BindJournal() {
  if (fd_ >= 0) ::close(fd_);
}

std::string BindJournal::bind(const K8sPod& pod, const std::string& node, const std::string& assigned_gpus) {
  return append(
      nlohmann::json{
          {"ns", pod.namespace_name}, {"name", pod.name}, {"uid", pod.uid}, {"node", node}, {"gpus", assigned_gpus}}
          .dump() +
      "\n");
}

std::vector<std::string> BindJournal::bind_gang(const std::vector<Item>& items, const std::string& commit_id) {
  // One append, one fdatasync: every member's record or (a write cut short)
  // a group that replay finds incomplete and skips.
  std::string lines;
  for (const Item& i : items)
    lines += nlohmann::json{{"ns", i.pod.namespace_name}, {"name", i.pod.name}, {"uid", i.pod.uid},  {"node", i.node},
                            {"gpus", i.assigned_gpus},    {"gang", commit_id},  {"of", items.size()}}
                 .dump() +
             "\n";
  return std::vector<std::string>(items.size(), append(lines));
}

std::string BindJournal::append(const std::string& line) {
  std::lock_guard lock(mu_);
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fmt::format("bind journal {}: write: {}", path_, errno_text());
    written += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) return fmt::format("bind journal {}: fdatasync: {}", path_, errno_text());
  return "";
}

std::vector<BindRecord> read_bind_journal(const std::string& path) {
  std::vector<BindRecord> out;
  if (!std::filesystem::exists(path)) return out;
  const std::string text = read_file_bounded(path);
  size_t start = 0, line_no = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // cut short by a crash: never acknowledged
    ++line_no;
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    auto str = [&](const char* key) -> std::string {
      if (!j.is_object() || !j.contains(key) || !j[key].is_string())
        throw std::runtime_error(fmt::format("{}:{}: not a bind record (field \"{}\")", path, line_no, key));
      return j[key].get<std::string>();
    };
    BindRecord r{str("ns"), str("name"), str("uid"), str("node"), str("gpus"), "", 0};
    if (j.contains("gang")) {
      r.gang = str("gang");
      if (!j.contains("of") || !j["of"].is_number_unsigned() || j["of"].get<uint64_t>() == 0)
        throw std::runtime_error(fmt::format("{}:{}: not a bind record (field \"of\")", path, line_no));
      r.gang_size = static_cast<size_t>(j["of"].get<uint64_t>());
    }
    out.push_back(std::move(r));
  }
  // A gang's records count only all together (a crash mid-append).
  std::unordered_map<std::string, size_t> seen;
  for (const BindRecord& r : out)
    if (!r.gang.empty()) ++seen[r.gang];
  std::erase_if(out, [&](const BindRecord& r) { return !r.gang.empty() && seen[r.gang] < r.gang_size; });
  return out;
}

std::vector<std::string> apply_bind_records(std::vector<nlohmann::json>& objects,
                                            const std::vector<BindRecord>& records) {
  std::unordered_map<std::string, size_t> by_key;
  for (size_t i = 0; i < objects.size(); ++i) {
    const nlohmann::json& o = objects[i];
    if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object()) continue;
    const nlohmann::json& m = o["metadata"];
    const std::string ns = m.contains("namespace") && m["namespace"].is_string() ? m["namespace"].get<std::string>()
                                                                                 : std::string("default");
    if (m.contains("name") && m["name"].is_string()) by_key[ns + "/" + m["name"].get<std::string>()] = i;
  }
  std::vector<std::string> messages;
  for (const BindRecord& r : records) {
    const std::string key = r.namespace_name + "/" + r.name;
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      messages.push_back(fmt::format("{}: bound to {} in the journal, not in the pod list", key, r.node));
      continue;
    }
    nlohmann::json& o = objects[it->second];
    const nlohmann::json& m = o["metadata"];
    if (!r.uid.empty() && m.contains("uid") && m["uid"].is_string() && m["uid"].get<std::string>() != r.uid) {
      messages.push_back(fmt::format("{}: the journal's bind is for UID {}, the pod list has another", key, r.uid));
      continue;
    }
    nlohmann::json& spec = o["spec"];
    if (spec.is_object() && spec.contains("nodeName") && spec["nodeName"].is_string() &&
        !spec["nodeName"].get_ref<const std::string&>().empty() && spec["nodeName"] != r.node) {
      messages.push_back(fmt::format("{}: the journal binds it to {}, the pod list to {}", key, r.node,
                                     spec["nodeName"].get<std::string>()));
      continue;
    }
    spec["nodeName"] = r.node;
    o["status"]["phase"] = "Running";
    if (!r.gpus.empty()) o["metadata"]["annotations"][std::string(annotations::kAssignedGpus)] = r.gpus;
  }
  return messages;
}

}  // namespace gpupack

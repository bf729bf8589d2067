#include "io/dcgm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>

#include "util/strings.h"

namespace gpupack {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool label_start(char c) { return name_start(c) && c != ':'; }
bool label_char(char c) { return name_char(c) && c != ':'; }
bool space_or_tab(char c) { return c == ' ' || c == '\t'; }

class LineParser {
 public:
  LineParser(std::string_view line, std::string_view source, int number) : s_(line), source_(source), number_(number) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw std::invalid_argument(fmt::format("{}:{}: {}", source_, number_, what));
  }
  void skip_blanks() {
    while (i_ < s_.size() && space_or_tab(s_[i_])) ++i_;
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }

  std::string metric_name() {
    size_t b = i_;
    if (at_end() || !name_start(s_[i_])) fail(fmt::format("expected a metric name at column {}", i_ + 1));
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  std::string label_name() {
    size_t b = i_;
    if (at_end() || !label_start(s_[i_])) fail(fmt::format("expected a label name at column {}", i_ + 1));
    while (i_ < s_.size() && label_char(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  std::string quoted() {
    if (peek() != '"') fail(fmt::format("expected '\"' at column {}", i_ + 1));
    ++i_;
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated label value");
      char c = s_[i_++];
      if (c == '"') return out;
      if (c == '\\') {
        if (at_end()) fail("unterminated escape in label value");
        char e = s_[i_++];
        if (e == '\\')
          out.push_back('\\');
        else if (e == '"')
          out.push_back('"');
        else if (e == 'n')
          out.push_back('\n');
        else
          fail(fmt::format("invalid escape \\{} in label value", e));
      } else {
        out.push_back(c);
      }
    }
  }

  std::vector<std::pair<std::string, std::string>> labels() {
    std::vector<std::pair<std::string, std::string>> out;
    ++i_;  // '{'
    while (true) {
      skip_blanks();
      if (peek() == '}') {
        ++i_;
        return out;
      }
      std::string name = label_name();
      skip_blanks();
      if (peek() != '=') fail(fmt::format("expected '=' after label {}", excerpt(name)));
      ++i_;
      skip_blanks();
      std::string value = quoted();
      for (const auto& [k, v] : out) {
        if (k == name) fail(fmt::format("label {} given twice", excerpt(name)));
      }
      out.emplace_back(std::move(name), std::move(value));
      skip_blanks();
      if (peek() == ',') {
        ++i_;
      } else if (peek() != '}') {
        fail(fmt::format("expected ',' or '}}' at column {}", i_ + 1));
      }
    }
  }

  std::string_view token() {
    size_t b = i_;
    while (i_ < s_.size() && !space_or_tab(s_[i_])) ++i_;
    return s_.substr(b, i_ - b);
  }

  double value(std::string_view tok) const {
    if (tok == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (tok == "+Inf" || tok == "Inf") return std::numeric_limits<double>::infinity();
    if (tok == "-Inf") return -std::numeric_limits<double>::infinity();
    bool digit = false;
    for (char c : tok) {
      if (c >= '0' && c <= '9') {
        digit = true;
      } else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') {
        fail(fmt::format("invalid sample value \"{}\"", excerpt(tok)));
      }
    }
    std::string text(tok);
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (!digit || end != text.c_str() + text.size()) fail(fmt::format("invalid sample value \"{}\"", excerpt(tok)));
    return v;
  }

  int64_t timestamp(std::string_view tok) const {
    size_t j = 0;
    bool neg = false;
    if (j < tok.size() && tok[j] == '-') {
      neg = true;
      ++j;
    }
    if (j >= tok.size() || tok.size() - j > 18) fail(fmt::format("invalid timestamp \"{}\"", excerpt(tok)));
    int64_t v = 0;
    for (; j < tok.size(); ++j) {
      if (tok[j] < '0' || tok[j] > '9') fail(fmt::format("invalid timestamp \"{}\"", excerpt(tok)));
      v = v * 10 + (tok[j] - '0');
    }
    return neg ? -v : v;
  }

  std::string_view rest() const { return s_.substr(std::min(i_, s_.size())); }
  void advance(size_t n) { i_ += n; }

 private:
  std::string_view s_;
  std::string_view source_;
  int number_;
  size_t i_ = 0;
};

std::string unescape_help(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
      out.push_back(s[i + 1] == 'n' ? '\n' : '\\');
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string series_key(const PromSample& s) {
  auto labels = s.labels;
  std::sort(labels.begin(), labels.end());
  std::string key = s.name;
  for (const auto& [k, v] : labels) {
    key += '\x1f';
    key += k;
    key += '=';
    key += v;
  }
  return key;
}

const std::string* first_label(const PromSample& s, std::initializer_list<std::string_view> keys) {
  for (auto k : keys) {
    if (const std::string* v = s.label(k)) return v;
  }
  return nullptr;
}

int small_int(const std::string& text) {
  if (text.empty() || text.size() > 6) return -1;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::optional<double> lookup(const std::map<std::string, double>& m, std::string_view name) {
  auto it = m.find(std::string(name));
  if (it == m.end()) return std::nullopt;
  return it->second;
}

}  // namespace

const std::string* PromSample::label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

PromScrape parse_prometheus_text(std::string_view text, std::string_view source) {
  PromScrape out;
  std::map<std::string, int> seen;  // series -> line
  int number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineParser p(line, source, number);
    p.skip_blanks();
    if (p.at_end()) continue;
    if (p.peek() == '#') {
      p.advance(1);
      p.skip_blanks();
      std::string_view keyword = p.token();
      if (keyword != "HELP" && keyword != "TYPE") continue;  // plain comment
      p.skip_blanks();
      std::string name = p.metric_name();
      if (keyword == "HELP") {
        if (!p.at_end() && !space_or_tab(p.peek())) p.fail("expected a space after the metric name");
        p.skip_blanks();
        out.help[name] = unescape_help(p.rest());
      } else {
        p.skip_blanks();
        std::string type(p.token());
        p.skip_blanks();
        static const std::set<std::string, std::less<>> kTypes = {"counter", "gauge", "histogram", "summary",
                                                                  "untyped"};
        if (kTypes.count(type) == 0 || !p.at_end())
          p.fail(fmt::format("invalid TYPE \"{}\" for {}", excerpt(type), excerpt(name)));
        if (!out.types.emplace(name, type).second) p.fail(fmt::format("second TYPE line for {}", excerpt(name)));
      }
      continue;
    }
    PromSample s;
    s.line = number;
    s.name = p.metric_name();
    bool spaced = space_or_tab(p.peek());
    p.skip_blanks();
    if (p.peek() == '{') {
      s.labels = p.labels();
      spaced = space_or_tab(p.peek());
      p.skip_blanks();
    }
    if (!p.at_end() && !spaced) p.fail("expected a space before the value");
    std::string_view value_tok = p.token();
    if (value_tok.empty()) p.fail(fmt::format("sample {} has no value", excerpt(s.name)));
    s.value = p.value(value_tok);
    p.skip_blanks();
    if (!p.at_end()) {
      s.timestamp_ms = p.timestamp(p.token());
      p.skip_blanks();
      if (!p.at_end()) p.fail(fmt::format("unexpected text after the timestamp: \"{}\"", excerpt(p.rest())));
    }
    auto [it, fresh] = seen.emplace(series_key(s), number);
    if (!fresh) p.fail(fmt::format("series {} already given on line {}", excerpt(s.name), it->second));
    out.samples.push_back(std::move(s));
  }
  return out;
}

std::optional<double> DcgmGpuObservation::metric(std::string_view name) const { return lookup(metrics, name); }
std::optional<double> DcgmPodObservation::metric(std::string_view name) const { return lookup(metrics, name); }

const DcgmGpuObservation* DcgmObservations::find_gpu(std::string_view hostname, int gpu, int gpu_instance) const {
  for (const auto& g : gpus) {
    if (g.key.hostname == hostname && g.key.gpu == gpu && g.key.gpu_instance == gpu_instance) return &g;
  }
  return nullptr;
}

DcgmObservations observe_dcgm(const PromScrape& scrape, std::string_view source) {
  std::map<GpuEntityKey, DcgmGpuObservation> gpus;
  using PodKey = std::tuple<std::string, std::string, std::string, GpuEntityKey>;
  std::map<PodKey, DcgmPodObservation> pods;
  for (const PromSample& s : scrape.samples) {
    bool is_dcgm = s.name.rfind("DCGM_FI_", 0) == 0 || s.name.rfind("dcgm_", 0) == 0;
    if (!is_dcgm) continue;
    auto fail = [&](std::string_view what) {
      throw std::invalid_argument(fmt::format("{}:{}: {} {}", source, s.line, excerpt(s.name), what));
    };
    GpuEntityKey key;
    const std::string* gpu = s.label("gpu");
    if (gpu == nullptr) fail("has no gpu label");
    key.gpu = small_int(*gpu);
    if (key.gpu < 0) fail(fmt::format("has gpu=\"{}\", not a GPU index", excerpt(*gpu)));
    if (const std::string* v = first_label(s, {"Hostname", "hostname"})) key.hostname = *v;
    if (const std::string* v = first_label(s, {"UUID", "uuid"})) key.uuid = *v;
    std::string profile;
    if (const std::string* v = s.label("GPU_I_PROFILE")) profile = *v;
    if (const std::string* v = s.label("GPU_I_ID"); v != nullptr && !v->empty()) {
      key.gpu_instance = small_int(*v);
      if (key.gpu_instance < 0) fail(fmt::format("has GPU_I_ID=\"{}\", not an instance id", excerpt(*v)));
    }

    // Frame-buffer fields are MiB: a value that is no memory size (NaN,
    // infinite, negative, beyond any GPU) would become nonsense advice.
    if (s.name.find("_FB_") != std::string::npos && !(std::isfinite(s.value) && s.value >= 0 && s.value < 1e9))
      fail(fmt::format("has value {}, not a memory size in MiB", s.value));
    DcgmGpuObservation& g = gpus[key];
    g.key = key;
    g.mig_profile = profile;
    if (const std::string* v = s.label("modelName"); v != nullptr && !v->empty()) {
      g.model_name = *v;
      g.model = GpuCatalog::builtin().find(*v);
    }
    g.metrics[s.name] = s.value;

    const std::string* ns = first_label(s, {"namespace", "pod_namespace"});
    const std::string* pod = first_label(s, {"pod", "pod_name"});
    if (ns != nullptr && pod != nullptr && !pod->empty()) {
      const std::string* container = first_label(s, {"container", "container_name"});
      std::string c = container ? *container : "";
      PodKey pk{*ns, *pod, c, key};
      DcgmPodObservation& po = pods[pk];
      po.namespace_name = *ns;
      po.pod = *pod;
      po.container = c;
      po.gpu = key;
      po.mig_profile = profile;
      po.metrics[s.name] = s.value;
      std::string ref = *ns + "/" + *pod;
      if (std::find(g.pods.begin(), g.pods.end(), ref) == g.pods.end()) g.pods.push_back(ref);
    }
  }
  if (gpus.empty())
    throw std::invalid_argument(
        fmt::format("{}: no DCGM samples (DCGM_FI_* or dcgm_*): not a dcgm-exporter scrape", source));
  DcgmObservations out;
  for (auto& [k, g] : gpus) {
    std::sort(g.pods.begin(), g.pods.end());
    out.gpus.push_back(std::move(g));
  }
  for (auto& [k, p] : pods) out.pods.push_back(std::move(p));
  return out;
}

}  // namespace gpupack

#include "server/extender_args_fast.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <variant>

#include "util/strings.h"

namespace gpupack {
namespace {

namespace od = simdjson::ondemand;
static_assert(kExtenderBodyPadding >= simdjson::SIMDJSON_PADDING);
using nlohmann::json;

struct ArgsFail {
  std::string field;
  std::string message;
};

// Which of several keys matching `want` the reference (nlohmann's sorted map
// plus find_key) would use: an exact key (the last duplicate), else the
// smallest case-insensitive match.
class KeyChoice {
 public:
  explicit KeyChoice(std::string_view want) : want_(want) {}
  // True when `key` matches and replaces the current choice.
  bool offer(std::string_view key) {
    if (key == want_) {
      exact_ = true;
      chosen_ = key;
      return true;
    }
    if (exact_ || !iequals(key, want_)) return false;
    if (!any_ || key <= chosen_) {
      any_ = true;
      chosen_ = key;
      return true;
    }
    return false;
  }
  bool found() const { return exact_ || any_; }

 private:
  std::string_view want_;
  std::string chosen_;
  bool exact_ = false;
  bool any_ = false;
};

std::string_view ondemand_type_name(od::json_type t) {
  switch (t) {
    case od::json_type::null:
      return "null";
    case od::json_type::boolean:
      return "a boolean";
    case od::json_type::number:
      return "a number";
    case od::json_type::string:
      return "a string";
    case od::json_type::array:
      return "an array";
    case od::json_type::object:
      return "an object";
  }
  return "a value";
}

std::string brief_text(std::string_view text) {
  std::string s(text);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Walks a document, reading every value (so all of it is validated) and
// keeping the JSON path for messages.
class Walker {
 public:
  explicit Walker(od::document& doc) : doc_(doc) {}

  std::string path() const {
    std::string p;
    for (const auto& part : path_) {
      if (std::holds_alternative<size_t>(part)) {
        p += fmt::format("[{}]", std::get<size_t>(part));
      } else {
        if (!p.empty()) p += '.';
        p += std::get<std::string_view>(part);
      }
    }
    return p;
  }
  void push(std::string_view key) { path_.emplace_back(key); }
  void push(size_t index) { path_.emplace_back(index); }
  void pop() { path_.pop_back(); }

  [[noreturn]] void fail(std::string message) const { throw ArgsFail{path(), std::move(message)}; }
  void check(simdjson::error_code e) const {
    if (e != simdjson::SUCCESS) fail(fmt::format("malformed JSON: {}", simdjson::error_message(e)));
  }
  void check_depth(int depth) const {
    if (depth > kMaxJsonDepth) throw ArgsFail{"", fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth)};
  }

  od::json_type type_of(od::value& v) const {
    od::json_type t{};
    check(v.type().get(t));
    return t;
  }
  std::string_view key_of(od::field& f) const {
    std::string_view k;
    check(f.unescaped_key().get(k));
    return k;
  }
  // Where the value `v` starts in the input.
  const char* start_of(od::value& v) const { return v.raw_json_token().data(); }
  // The text from `start` to the current position (just after a consumed
  // value), without trailing whitespace.
  std::string_view text_from(const char* start) {
    const char* end = nullptr;
    check(doc_.current_location().get(end));
    while (end > start && std::isspace(static_cast<unsigned char>(end[-1]))) --end;
    return {start, static_cast<size_t>(end - start)};
  }

  // Reads `v` and everything inside it.
  void skip(od::value v, int depth) {
    switch (type_of(v)) {
      case od::json_type::object: {
        check_depth(depth);
        od::object o;
        check(v.get_object().get(o));
        for (auto f : o) {
          od::field field;
          check(std::move(f).get(field));
          push(key_of(field));
          skip(field.value(), depth + 1);
          pop();
        }
        break;
      }
      case od::json_type::array: {
        check_depth(depth);
        od::array a;
        check(v.get_array().get(a));
        size_t i = 0;
        for (auto e : a) {
          od::value item;
          // NOLINTNEXTLINE(performance-move-const-arg): simdjson_result::get() is &&-qualified
          check(std::move(e).get(item));
          push(i++);
          skip(item, depth + 1);
          pop();
        }
        break;
      }
      case od::json_type::string: {
        std::string_view s;
        check(v.get_string().get(s));
        break;
      }
      case od::json_type::number: {
        double d = 0;
        check(v.get_double().get(d));
        break;
      }
      case od::json_type::boolean: {
        bool b = false;
        check(v.get_bool().get(b));
        break;
      }
      case od::json_type::null: {
        bool is_null = false;
        check(v.is_null().get(is_null));
        if (!is_null) fail("malformed JSON: invalid literal");
        break;
      }
    }
  }

  // Reads `v` and returns its text.
  std::string_view skip_text(od::value v, int depth) {
    const char* start = start_of(v);
    skip(v, depth);
    return text_from(start);
  }

 private:
  od::document& doc_;
  std::vector<std::variant<std::string_view, size_t>> path_;
};

// A semantic error found while walking, raised only after the whole body has
// been validated (the reference reports malformed JSON first).
using Deferred = std::optional<ArgsFail>;

ArgsFail wrong_type(const std::string& field, std::string_view want, od::json_type got, std::string_view text) {
  return ArgsFail{field, fmt::format("expected {}, got {} ({})", want, ondemand_type_name(got), brief_text(text))};
}

// metadata.name of one node item; *error set on a semantic problem.
// The field path is built only for a message (this runs once per node).
std::string item_name(Walker& w, od::value item, size_t index, int depth, Deferred& error) {
  const auto field = [index] { return fmt::format("Nodes.items[{}]", index); };
  const od::json_type t = w.type_of(item);
  if (t != od::json_type::object) {
    std::string_view text = w.skip_text(item, depth);
    error = wrong_type(field(), "an object", t, text);
    return {};
  }
  od::object obj;
  w.check(item.get_object().get(obj));
  w.check_depth(depth);
  KeyChoice meta_key("metadata");
  std::optional<std::string> name;
  Deferred meta_error;
  bool meta_null = false;
  for (auto f : obj) {
    od::field fld;
    w.check(std::move(f).get(fld));
    std::string_view key = w.key_of(fld);
    w.push(key);
    od::value v = fld.value();
    if (meta_key.offer(key)) {
      name.reset();
      meta_error.reset();
      meta_null = false;
      const od::json_type mt = w.type_of(v);
      const auto mfield = [&field] { return field() + ".metadata"; };
      if (mt == od::json_type::null) {
        w.skip(v, depth + 1);
        meta_null = true;
      } else if (mt != od::json_type::object) {
        meta_error = wrong_type(mfield(), "an object", mt, w.skip_text(v, depth + 1));
      } else {
        od::object meta;
        w.check(v.get_object().get(meta));
        w.check_depth(depth + 1);
        KeyChoice name_key("name");
        Deferred name_error;
        bool name_null = false;
        for (auto mf : meta) {
          od::field mfld;
          w.check(std::move(mf).get(mfld));
          std::string_view mkey = w.key_of(mfld);
          w.push(mkey);
          od::value nv = mfld.value();
          if (name_key.offer(mkey)) {
            name.reset();
            name_error.reset();
            name_null = false;
            const od::json_type nt = w.type_of(nv);
            if (nt == od::json_type::string) {
              std::string_view s;
              w.check(nv.get_string().get(s));
              name = std::string(s);
            } else if (nt == od::json_type::null) {
              w.skip(nv, depth + 2);
              name_null = true;
            } else {
              name_error = wrong_type(mfield() + ".name", "a string", nt, w.skip_text(nv, depth + 2));
            }
          } else {
            w.skip(nv, depth + 2);
          }
          w.pop();
        }
        if (name_error) {
          meta_error = name_error;
        } else if (!name_key.found() || name_null) {
          meta_error = ArgsFail{mfield() + ".name", "missing"};
        } else if (name->empty()) {
          meta_error = ArgsFail{mfield() + ".name", "empty"};
        }
      }
    } else {
      w.skip(v, depth + 1);
    }
    w.pop();
  }
  if (!meta_key.found() || meta_null) {
    error = ArgsFail{field() + ".metadata", "missing"};
    return {};
  }
  if (meta_error) {
    error = meta_error;
    return {};
  }
  return *name;
}

struct NodeListRead {
  std::optional<std::vector<NodeText>> items;  // nullopt: null
  Deferred error;
};

NodeListRead read_node_list(Walker& w, od::value v, int depth) {
  NodeListRead out;
  const od::json_type t = w.type_of(v);
  if (t == od::json_type::null) {
    w.skip(v, depth);
    return out;
  }
  if (t != od::json_type::object) {
    out.error = wrong_type("Nodes", "a NodeList object", t, w.skip_text(v, depth));
    return out;
  }
  od::object list;
  w.check(v.get_object().get(list));
  w.check_depth(depth);
  out.items.emplace();
  KeyChoice items_key("items");
  for (auto f : list) {
    od::field fld;
    w.check(std::move(f).get(fld));
    std::string_view key = w.key_of(fld);
    w.push(key);
    od::value iv = fld.value();
    if (items_key.offer(key)) {
      out.items->clear();
      out.error.reset();
      const od::json_type it = w.type_of(iv);
      if (it == od::json_type::array) {
        od::array arr;
        w.check(iv.get_array().get(arr));
        w.check_depth(depth + 1);
        size_t i = 0;
        for (auto e : arr) {
          od::value item;
          // NOLINTNEXTLINE(performance-move-const-arg): simdjson_result::get() is &&-qualified
          w.check(std::move(e).get(item));
          w.push(i);
          const char* start = w.start_of(item);
          Deferred item_error;
          std::string name = item_name(w, item, i, depth + 2, item_error);
          std::string_view text = w.text_from(start);
          if (item_error && !out.error) out.error = item_error;
          if (!out.error) out.items->push_back(NodeText{std::move(name), text});
          w.pop();
          ++i;
        }
      } else if (it == od::json_type::null) {
        w.skip(iv, depth + 1);
      } else {
        out.error = wrong_type("Nodes.items", "an array", it, w.skip_text(iv, depth + 1));
      }
    } else {
      w.skip(iv, depth + 1);
    }
    w.pop();
  }
  return out;
}

struct NamesRead {
  std::optional<std::vector<std::string>> names;
  Deferred error;
};

NamesRead read_names(Walker& w, od::value v, int depth) {
  NamesRead out;
  const od::json_type t = w.type_of(v);
  if (t == od::json_type::null) {
    w.skip(v, depth);
    return out;
  }
  if (t != od::json_type::array) {
    out.error = wrong_type("NodeNames", "an array of strings", t, w.skip_text(v, depth));
    return out;
  }
  od::array arr;
  w.check(v.get_array().get(arr));
  w.check_depth(depth);
  out.names.emplace();
  size_t i = 0;
  for (auto e : arr) {
    od::value item;
    // NOLINTNEXTLINE(performance-move-const-arg): simdjson_result::get() is &&-qualified
    w.check(std::move(e).get(item));
    w.push(i);
    const od::json_type it = w.type_of(item);
    if (it == od::json_type::string) {
      std::string_view s;
      w.check(item.get_string().get(s));
      if (!out.error) out.names->emplace_back(s);
    } else {
      std::string_view text = w.skip_text(item, depth + 1);
      if (!out.error) out.error = wrong_type(fmt::format("NodeNames[{}]", i), "a string", it, text);
    }
    w.pop();
    ++i;
  }
  return out;
}

// The Pod: an object whose metadata.name is a non-empty string.
json read_pod(std::string_view text) {
  json pod = json::parse(text.begin(), text.end());
  if (!pod.is_object()) {
    throw ArgsFail{"Pod", fmt::format("expected an object, got {}", brief_text(text))};
  }
  const json* meta = nullptr;
  for (auto it = pod.begin(); it != pod.end(); ++it) {
    if (it.key() == "metadata") {
      meta = &*it;
      break;
    }
    if (meta == nullptr && iequals(it.key(), "metadata")) meta = &*it;
  }
  if (meta == nullptr || meta->is_null()) throw ArgsFail{"Pod.metadata", "missing"};
  if (!meta->is_object())
    throw ArgsFail{"Pod.metadata", fmt::format("expected an object, got {}", brief_text(meta->dump()))};
  const json* name = nullptr;
  for (auto it = meta->begin(); it != meta->end(); ++it) {
    if (it.key() == "name") {
      name = &*it;
      break;
    }
    if (name == nullptr && iequals(it.key(), "name")) name = &*it;
  }
  if (name == nullptr || name->is_null()) throw ArgsFail{"Pod.metadata.name", "missing"};
  if (!name->is_string()) {
    throw ArgsFail{"Pod.metadata.name", fmt::format("expected a string, got {}", brief_text(name->dump()))};
  }
  if (name->get_ref<const std::string&>().empty()) throw ArgsFail{"Pod.metadata.name", "empty"};
  return pod;
}

// Parsers are kept per thread so that their buffers stay warm, up to this
// body size; one that grew past it (a rare huge body) is released after use,
// bounding what each server thread keeps.
constexpr size_t kRetainedParserBytes = 8u << 20;

od::parser& ondemand_parser() {
  thread_local od::parser parser;
  return parser;
}

void release_if_large(od::parser& parser) {
  if (parser.capacity() > kRetainedParserBytes) parser = od::parser{};
}

ExtenderArgs read_args(std::shared_ptr<const std::string> source, size_t length) {
  od::parser& parser = ondemand_parser();
  od::document doc;
  Walker w(doc);
  if (parser.capacity() < length) w.check(parser.allocate(length + length / 4));  // headroom, as below
  w.check(parser.iterate(source->data(), length, source->size()).get(doc));
  od::json_type root_type{};
  w.check(doc.type().get(root_type));
  if (root_type != od::json_type::object) {
    throw ArgsFail{"body", fmt::format("expected an object, got {}", ondemand_type_name(root_type))};
  }
  od::object root;
  w.check(doc.get_object().get(root));
  KeyChoice pod_key("Pod"), nodes_key("Nodes"), names_key("NodeNames");
  std::optional<std::string_view> pod_text;
  NodeListRead nodes;
  NamesRead names;
  for (auto f : root) {
    od::field fld;
    w.check(std::move(f).get(fld));
    std::string_view key = w.key_of(fld);
    w.push(key);
    od::value v = fld.value();
    if (pod_key.offer(key)) {
      pod_text = w.skip_text(v, 2);
    } else if (nodes_key.offer(key)) {
      nodes = read_node_list(w, v, 2);
    } else if (names_key.offer(key)) {
      names = read_names(w, v, 2);
    } else {
      w.skip(v, 2);
    }
    w.pop();
  }
  const char* after = nullptr;
  if (doc.current_location().get(after) == simdjson::SUCCESS) {
    throw ArgsFail{"", "malformed JSON: content after the top-level object"};
  }

  ExtenderArgs a;
  if (!pod_text || *pod_text == "null") throw ArgsFail{"Pod", "missing"};
  a.pod = read_pod(*pod_text);
  if (nodes.error) throw *nodes.error;
  if (names.error) throw *names.error;
  a.node_texts = std::move(nodes.items);
  a.node_names = std::move(names.names);
  if (!a.node_texts && !a.node_names) throw ArgsFail{"Nodes", "neither Nodes nor NodeNames is set"};
  a.source = std::move(source);
  return a;
}

// --- the quick path -------------------------------------------------------
// One On-Demand pass over a body of the common shape: the keys the reference
// would choose, the Pod's text, each node item's exact text, the NodeNames.
// What the pass steps over unread is validated apart: a node item through
// the items read before (ReadItems: an item whose bytes equal a text read
// whole before is valid and has that text's name; a scheduler sends the same
// Node objects call after call), or, when new or changed, read whole by
// simdjson's DOM parser; the Pod and any other value by the DOM parser. So
// the whole body is checked, at the cost of one structural scan and a memcmp
// per known item instead of a second full parse. Anything outside the common
// shape returns nullopt, and the thorough walk decides (with its messages).

namespace dom = simdjson::dom;

// Texts the quick path steps over sit at most this deep in the body (root
// object, Nodes, items); they are validated at the remaining depth, with
// one level to spare (a text at the limit goes to the thorough walk, whose
// answer is the reference either way).
constexpr int kSpanDepth = kMaxJsonDepth - 4;

// Parses `text` (inside a buffer padded for simdjson) with this thread's DOM
// parser, held to kSpanDepth; false when malformed or nested deeper. The
// element lives until the thread's next call.
bool parse_span(std::string_view text, dom::element* root) {
  thread_local dom::parser parser;
  // A parser grown past the retained size for a rare huge text is released
  // at the next call (not now: `root` points into it).
  if (parser.capacity() > kRetainedParserBytes && text.size() <= kRetainedParserBytes) parser = dom::parser{};
  if (parser.capacity() < text.size() || parser.max_depth() != static_cast<size_t>(kSpanDepth)) {
    if (parser.allocate(std::max<size_t>(text.size() + text.size() / 4, 4096), kSpanDepth) != simdjson::SUCCESS)
      return false;
  }
  return parser.parse(text.data(), text.size(), false).get(*root) == simdjson::SUCCESS;
}

bool span_valid(std::string_view text) {
  dom::element root;
  return parse_span(text, &root);
}

// The element of `object` chosen for each wanted key under the reference's
// key rules.
template <size_t N>
std::array<std::optional<dom::element>, N> choose(dom::object object, const std::array<std::string_view, N>& wanted) {
  std::vector<KeyChoice> keys(wanted.begin(), wanted.end());
  std::array<std::optional<dom::element>, N> out;
  for (dom::key_value_pair field : object) {
    for (size_t k = 0; k < N; ++k)
      if (keys[k].offer(field.key)) out[k] = field.value;
  }
  return out;
}

// Reads a node item's text whole (validating it): its metadata.name under
// the reference's key rules, or nullopt when malformed, nameless, or the
// name is empty or not a string.
std::optional<std::string> read_item(std::string_view text) {
  dom::element item;
  dom::object obj, meta;
  std::string_view name;
  if (!parse_span(text, &item) || item.get_object().get(obj) != simdjson::SUCCESS) return std::nullopt;
  const std::optional<dom::element> m = choose<1>(obj, {"metadata"})[0];
  if (!m || m->get_object().get(meta) != simdjson::SUCCESS) return std::nullopt;
  const std::optional<dom::element> n = choose<1>(meta, {"name"})[0];
  if (!n || n->get_string().get(name) != simdjson::SUCCESS || name.empty()) return std::nullopt;
  return std::string(name);
}

// A node item as the quick pass saw it: its exact text and a hint to look
// it up by (the first "metadata" key's first "name" string, as written).
struct ItemSeen {
  std::string hint;
  std::string_view text;
};

// Node items read whole before: by hint, the exact text and the name the
// reference takes from it. Shared by the server's threads, bounded in bytes
// (emptied when full). An item whose text equals the one kept under its
// hint is valid and has that name: a scheduler sends the same Node objects
// call after call.
class ReadItems {
 public:
  // The names of `items`, in order; nullopt when one is malformed or
  // nameless (the thorough walk then reports it).
  std::optional<std::vector<std::string>> names(const std::vector<ItemSeen>& items) {
    std::vector<std::string> out(items.size());
    std::vector<size_t> fresh;
    {
      std::lock_guard lock(mu_);
      for (size_t k = 0; k < items.size(); ++k) {
        auto it = known_.find(items[k].hint);
        if (it != known_.end() && it->second.text == items[k].text)
          out[k] = it->second.name;
        else
          fresh.push_back(k);
      }
    }
    for (size_t k : fresh) {
      std::optional<std::string> name = read_item(items[k].text);
      if (!name) return std::nullopt;
      out[k] = std::move(*name);
    }
    std::lock_guard lock(mu_);
    for (size_t k : fresh) {
      const ItemSeen& item = items[k];
      const size_t need = item.hint.size() + item.text.size() + out[k].size();
      if (need > kMaxBytes) continue;
      if (bytes_ + need > kMaxBytes) {
        known_.clear();
        bytes_ = 0;
      }
      auto [it, added] = known_.try_emplace(item.hint);
      if (!added) bytes_ -= it->first.size() + it->second.text.size() + it->second.name.size();
      it->second.text.assign(item.text);
      it->second.name = out[k];
      bytes_ += need;
    }
    return out;
  }

 private:
  struct Known {
    std::string text;
    std::string name;
  };
  static constexpr size_t kMaxBytes = 64u << 20;
  std::mutex mu_;
  std::unordered_map<std::string, Known> known_;
  size_t bytes_ = 0;
};

ReadItems& read_items() {
  static ReadItems items;
  return items;
}

// The quick pass's reading of one value; false = not the common shape (or
// malformed): the thorough walk takes over.
class QuickPass {
 public:
  // A Pod field's value; a later chosen one replaces it (the replaced text
  // is still validated).
  bool pod(od::value v) {
    if (!pod_text.empty()) spans.push_back(pod_text);
    return simdjson::to_json_string(v).get(pod_text) == simdjson::SUCCESS;
  }
  // A Pod was read, and what the pass stepped over is well-formed: the Pod
  // (read_pod reads its syntax, not its depth) and every other value.
  bool pod_and_spans_valid() const {
    return !pod_text.empty() && pod_text != "null" && span_valid(pod_text) &&
           std::all_of(spans.begin(), spans.end(), span_valid);
  }
  // Steps over `v`, keeping its text to validate apart.
  bool skip(od::value v) {
    std::string_view text;
    if (simdjson::to_json_string(v).get(text) != simdjson::SUCCESS) return false;
    spans.push_back(text);
    return true;
  }
  bool key(od::field& f, std::string_view* out) { return f.unescaped_key().get(*out) == simdjson::SUCCESS; }
  bool null(od::value& v, bool* out) {
    od::json_type t{};
    if (v.type().get(t) != simdjson::SUCCESS) return false;
    *out = t == od::json_type::null;
    if (!*out) return true;
    bool is_null = false;
    return v.is_null().get(is_null) == simdjson::SUCCESS && is_null;
  }

  // Nodes: {"items": [...], ...}; items in `items` (cleared when a later
  // key takes over).
  bool node_list(od::value v) {
    od::object list;
    if (v.get_object().get(list) != simdjson::SUCCESS) return false;
    KeyChoice items_key("items");
    for (auto f : list) {
      od::field fld;
      if (std::move(f).get(fld) != simdjson::SUCCESS) return false;
      std::string_view k;
      if (!key(fld, &k)) return false;
      od::value iv = fld.value();
      if (!items_key.offer(k)) {
        if (!skip(iv)) return false;
        continue;
      }
      done_items.insert(done_items.end(), items.begin(), items.end());  // still to validate
      items.clear();
      od::array arr;
      if (iv.get_array().get(arr) != simdjson::SUCCESS) return false;
      for (auto e : arr) {
        od::value item;
        // NOLINTNEXTLINE(performance-move-const-arg): simdjson_result::get() is &&-qualified
        if (std::move(e).get(item) != simdjson::SUCCESS || !node_item(item)) return false;
      }
    }
    return items_key.found();
  }

  // One item: its text and lookup hint. The hint is read without the key
  // rules (first exact keys, as written); the memo or a whole read of the
  // item gives the name (see ReadItems).
  bool node_item(od::value item) {
    od::object obj;
    if (item.get_object().get(obj) != simdjson::SUCCESS) return false;
    std::string hint;
    for (auto f : obj) {
      od::field fld;
      if (std::move(f).get(fld) != simdjson::SUCCESS) return false;
      if (!fld.key().is_equal("metadata")) continue;
      od::object meta;
      if (fld.value().get_object().get(meta) != simdjson::SUCCESS) return false;
      for (auto mf : meta) {
        od::field mfld;
        if (std::move(mf).get(mfld) != simdjson::SUCCESS) return false;
        if (!mfld.key().is_equal("name")) continue;
        std::string_view s;
        if (mfld.value().get_string().get(s) != simdjson::SUCCESS) return false;
        hint = s;
        break;
      }
      break;
    }
    std::string_view text;  // from '{' to the next token: steps over the rest
    if (obj.raw_json().get(text) != simdjson::SUCCESS) return false;
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    if (text.empty() || text.back() != '}') return false;
    items.push_back(ItemSeen{std::move(hint), text});
    return true;
  }

  bool node_names(od::value v, std::vector<std::string>* out) {
    od::array arr;
    if (v.get_array().get(arr) != simdjson::SUCCESS) return false;
    out->clear();
    for (auto e : arr) {
      std::string_view s;
      // NOLINTNEXTLINE(performance-move-const-arg): simdjson_result::get() is &&-qualified
      if (std::move(e).get_string().get(s) != simdjson::SUCCESS) return false;
      out->emplace_back(s);
    }
    return true;
  }

  std::string_view pod_text;            // the chosen Pod's
  std::vector<std::string_view> spans;  // stepped over, to validate
  std::vector<ItemSeen> items;          // the chosen Nodes.items
  std::vector<ItemSeen> done_items;     // items of keys a later one replaced
};

// --- the repeated tail ------------------------------------------------------
// A scheduler sends the same node list call after call; only the Pod, its
// first field, changes. The last quick read keeps the body's tail, from the
// first field after the Pod to the end, with what was read from it. A body
// that ends with the same bytes is read by reading its head alone: the head
// followed by `"_":null}` must be a well-formed object (then head + tail is
// one too: the tail was read in that same place), holding the Pod and no
// field the tail's could compete with.

struct Tail {
  std::shared_ptr<const std::string> body;  // the last body read quickly (kept, not copied)
  std::string_view text;                    // its tail: from a root field's key to the end
  bool has_nodes = false, has_names = false;
  std::vector<NodeText> items;  // views into `body`
  std::vector<std::string> names;
};

class LastTail {
 public:
  std::shared_ptr<const Tail> get() const {
    std::lock_guard lock(mu_);
    return tail_;
  }
  void set(std::shared_ptr<const Tail> t) {
    std::lock_guard lock(mu_);
    tail_ = std::move(t);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Tail> tail_;
};

LastTail& last_tail() {
  static LastTail tail;
  return tail;
}

// The names of `items`: an item whose text equals the last body's item at
// the same position has its name (no lookup: a scheduler sends its nodes in
// the same order), the others go through ReadItems.
std::optional<std::vector<std::string>> known_in_place(const std::vector<ItemSeen>& items) {
  const std::shared_ptr<const Tail> tail = last_tail().get();
  const std::vector<NodeText>* last = tail ? &tail->items : nullptr;
  std::vector<std::string> out(items.size());
  std::vector<ItemSeen> rest;
  std::vector<size_t> rest_at;
  for (size_t k = 0; k < items.size(); ++k) {
    if (last != nullptr && k < last->size() && (*last)[k].json == items[k].text) {
      out[k] = (*last)[k].name;
    } else {
      rest.push_back(items[k]);
      rest_at.push_back(k);
    }
  }
  if (rest.empty()) return out;
  std::optional<std::vector<std::string>> names = read_items().names(rest);
  if (!names) return std::nullopt;
  for (size_t i = 0; i < rest_at.size(); ++i) out[rest_at[i]] = std::move((*names)[i]);
  return out;
}

// Keys that could be chosen for one of the three fields.
bool pod_like(std::string_view key) { return iequals(key, "Pod"); }
bool list_like(std::string_view key) { return iequals(key, "Nodes") || iequals(key, "NodeNames"); }

// The body when it ends with the last tail; nullopt otherwise (or when the
// head is not of the common shape).
std::optional<ExtenderArgs> read_args_repeated(const std::shared_ptr<const std::string>& source, size_t length) {
  const std::shared_ptr<const Tail> tail = last_tail().get();
  if (!tail || tail->text.size() >= length) return std::nullopt;
  const size_t head_size = length - tail->text.size();
  if (std::memcmp(source->data() + head_size, tail->text.data(), tail->text.size()) != 0) return std::nullopt;

  static constexpr std::string_view kClose = R"("_":null})";
  thread_local std::string head;
  if (head.capacity() > kRetainedParserBytes && head_size <= kRetainedParserBytes) head = std::string();
  head.assign(source->data(), head_size);
  head.append(kClose);
  const size_t head_length = head.size();
  head.append(simdjson::SIMDJSON_PADDING, ' ');
  od::parser& parser = ondemand_parser();
  od::document doc;
  od::object root;
  if (parser.iterate(head.data(), head_length, head.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(root) != simdjson::SUCCESS)
    return std::nullopt;
  QuickPass q;
  KeyChoice pod_key("Pod");
  const char* closing_key = head.data() + head_size;
  bool closed = false;
  for (auto f : root) {
    od::field fld;
    if (std::move(f).get(fld) != simdjson::SUCCESS) return std::nullopt;
    if (closed) return std::nullopt;  // a field after ours: not possible in a well-formed head
    if (fld.key().raw() - 1 == closing_key) {
      closed = true;
      if (!q.skip(fld.value())) return std::nullopt;
      continue;
    }
    std::string_view k;
    if (!q.key(fld, &k) || list_like(k)) return std::nullopt;
    od::value v = fld.value();
    if (pod_key.offer(k)) {
      if (!q.pod(v)) return std::nullopt;
    } else if (!q.skip(v)) {
      return std::nullopt;
    }
  }
  const char* after = nullptr;
  if (!closed || doc.current_location().get(after) == simdjson::SUCCESS) return std::nullopt;
  if (!q.pod_and_spans_valid()) return std::nullopt;

  ExtenderArgs a;
  a.pod = read_pod(q.pod_text);  // a ArgsFail here: the thorough walk reports it
  const char* base = source->data() + head_size;
  if (tail->has_nodes) {
    a.node_texts.emplace();
    a.node_texts->reserve(tail->items.size());
    for (const NodeText& item : tail->items)
      a.node_texts->push_back(
          NodeText{item.name, std::string_view(base + (item.json.data() - tail->text.data()), item.json.size())});
  }
  if (tail->has_names) a.node_names = tail->names;
  a.source = source;
  return a;
}

std::optional<ExtenderArgs> read_args_quick(std::shared_ptr<const std::string> source, size_t length) {
  od::parser& parser = ondemand_parser();
  if (parser.capacity() < length && parser.allocate(length + length / 4) != simdjson::SUCCESS) return std::nullopt;
  od::document doc;
  od::object root;
  if (parser.iterate(source->data(), length, source->size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(root) != simdjson::SUCCESS)
    return std::nullopt;
  QuickPass q;
  KeyChoice pod_key("Pod"), nodes_key("Nodes"), names_key("NodeNames");
  bool has_nodes = false, has_names = false;
  std::vector<std::string> names;
  // Where the tail would start: the first field after the last Pod-like one,
  // when every list-like field comes after it.
  const char* tail_start = nullptr;
  bool after_pod = false, list_before_tail = false;
  for (auto f : root) {
    od::field fld;
    if (std::move(f).get(fld) != simdjson::SUCCESS) return std::nullopt;
    const char* key_at = fld.key().raw() - 1;  // the opening quote (read before the key is unescaped)
    std::string_view k;
    if (!q.key(fld, &k)) return std::nullopt;
    if (pod_like(k)) {
      after_pod = true;
      tail_start = nullptr;
    } else if (after_pod && tail_start == nullptr) {
      tail_start = key_at;
    }
    if (list_like(k) && tail_start == nullptr) list_before_tail = true;
    od::value v = fld.value();
    if (pod_key.offer(k)) {
      if (!q.pod(v)) return std::nullopt;
    } else if (nodes_key.offer(k)) {
      bool is_null = false;
      if (!q.null(v, &is_null)) return std::nullopt;
      q.done_items.insert(q.done_items.end(), q.items.begin(), q.items.end());
      q.items.clear();
      has_nodes = !is_null;
      if (has_nodes && !q.node_list(v)) return std::nullopt;
    } else if (names_key.offer(k)) {
      bool is_null = false;
      if (!q.null(v, &is_null)) return std::nullopt;
      has_names = !is_null;
      if (has_names && !q.node_names(v, &names)) return std::nullopt;
    } else if (!q.skip(v)) {
      return std::nullopt;
    }
  }
  const char* after = nullptr;
  if (doc.current_location().get(after) == simdjson::SUCCESS) return std::nullopt;  // content after the object
  if ((!has_nodes && !has_names) || !q.pod_and_spans_valid()) return std::nullopt;
  // Then every node item stepped over.
  if (!read_items().names(q.done_items)) return std::nullopt;
  std::optional<std::vector<std::string>> item_names = known_in_place(q.items);
  if (!item_names) return std::nullopt;

  ExtenderArgs a;
  a.pod = read_pod(q.pod_text);  // a ArgsFail here: the thorough walk reports it
  if (has_nodes) {
    a.node_texts.emplace();
    a.node_texts->reserve(q.items.size());
    for (size_t k = 0; k < q.items.size(); ++k)
      a.node_texts->push_back(NodeText{std::move((*item_names)[k]), q.items[k].text});
  }
  if (has_names) a.node_names = std::move(names);

  if (tail_start != nullptr && !list_before_tail) {
    auto t = std::make_shared<Tail>();
    t->body = source;
    t->text = std::string_view(tail_start, static_cast<size_t>(source->data() + length - tail_start));
    t->has_nodes = has_nodes;
    t->has_names = has_names;
    if (has_nodes) t->items = *a.node_texts;
    if (has_names) t->names = *a.node_names;
    last_tail().set(std::move(t));
  }
  a.source = std::move(source);
  return a;
}

std::shared_ptr<std::string> padded(std::string&& body) {
  const size_t length = body.size();
  if (body.capacity() < length + simdjson::SIMDJSON_PADDING) body.reserve(length + simdjson::SIMDJSON_PADDING);
  body.append(simdjson::SIMDJSON_PADDING, ' ');  // within the capacity: no copy
  return std::make_shared<std::string>(std::move(body));
}

WireResult<ExtenderArgs> read_guarded(std::shared_ptr<const std::string> source, size_t length) {
  try {
    return read_args(std::move(source), length);
  } catch (const ArgsFail& f) {
    return WireError{f.field, f.message};
  } catch (const std::exception& e) {
    return WireError{"", fmt::format("invalid body: {}", e.what())};
  } catch (...) {
    return WireError{"", "invalid body"};
  }
}

std::atomic<uint64_t> g_repeated{0}, g_quick{0}, g_thorough{0};

}  // namespace

ExtenderArgsReads extender_args_reads() { return {g_repeated.load(), g_quick.load(), g_thorough.load()}; }

WireResult<ExtenderArgs> parse_extender_args_fast(std::string&& body) {
  const size_t length = body.size();
  std::shared_ptr<std::string> source = padded(std::move(body));
  // The common case, a well-formed body with the expected shape, takes the
  // quick path; anything else (malformed, too deep, a wrong type, a missing
  // name) is read again thoroughly, whose answer and message are the reference.
  std::optional<ExtenderArgs> quick;
  try {
    quick = read_args_repeated(source, length);
    if (quick) {
      ++g_repeated;
    } else {
      quick = read_args_quick(source, length);
      if (quick) ++g_quick;
    }
  } catch (const std::exception&) {  // e.g. the Pod is not a usable object
  } catch (const ArgsFail&) {
  }
  if (!quick) ++g_thorough;
  WireResult<ExtenderArgs> out = quick ? WireResult<ExtenderArgs>(std::move(*quick)) : read_guarded(source, length);
  release_if_large(ondemand_parser());
  return out;
}

WireResult<ExtenderArgs> parse_extender_args_fast(std::string_view body) {
  std::string copy;
  copy.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  copy.append(body);
  return parse_extender_args_fast(std::move(copy));
}

WireResult<ExtenderArgs> parse_extender_args_thorough(std::string_view body) {
  std::string copy(body);
  const size_t length = copy.size();
  return read_guarded(padded(std::move(copy)), length);
}

}  // namespace gpupack

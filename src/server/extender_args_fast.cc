#include "server/extender_args_fast.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>
#include <variant>

namespace gpupack {
namespace {

namespace od = simdjson::ondemand;
using nlohmann::json;

struct Fail {
  std::string field;
  std::string message;
};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

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
    if (exact_ || !iequal(key, want_)) return false;
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

std::string_view type_name(od::json_type t) {
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

std::string brief(std::string_view text) {
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

  [[noreturn]] void fail(std::string message) const { throw Fail{path(), std::move(message)}; }
  void check(simdjson::error_code e) const {
    if (e != simdjson::SUCCESS) fail(fmt::format("malformed JSON: {}", simdjson::error_message(e)));
  }
  void check_depth(int depth) const {
    if (depth > kMaxJsonDepth) throw Fail{"", fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth)};
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
using Deferred = std::optional<Fail>;

Fail wrong_type(const std::string& field, std::string_view want, od::json_type got, std::string_view text) {
  return Fail{field, fmt::format("expected {}, got {} ({})", want, type_name(got), brief(text))};
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
          meta_error = Fail{mfield() + ".name", "missing"};
        } else if (name->empty()) {
          meta_error = Fail{mfield() + ".name", "empty"};
        }
      }
    } else {
      w.skip(v, depth + 1);
    }
    w.pop();
  }
  if (!meta_key.found() || meta_null) {
    error = Fail{field() + ".metadata", "missing"};
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
    throw Fail{"Pod", fmt::format("expected an object, got {}", brief(text))};
  }
  const json* meta = nullptr;
  for (auto it = pod.begin(); it != pod.end(); ++it) {
    if (it.key() == "metadata") {
      meta = &*it;
      break;
    }
    if (meta == nullptr && iequal(it.key(), "metadata")) meta = &*it;
  }
  if (meta == nullptr || meta->is_null()) throw Fail{"Pod.metadata", "missing"};
  if (!meta->is_object()) throw Fail{"Pod.metadata", fmt::format("expected an object, got {}", brief(meta->dump()))};
  const json* name = nullptr;
  for (auto it = meta->begin(); it != meta->end(); ++it) {
    if (it.key() == "name") {
      name = &*it;
      break;
    }
    if (name == nullptr && iequal(it.key(), "name")) name = &*it;
  }
  if (name == nullptr || name->is_null()) throw Fail{"Pod.metadata.name", "missing"};
  if (!name->is_string()) {
    throw Fail{"Pod.metadata.name", fmt::format("expected a string, got {}", brief(name->dump()))};
  }
  if (name->get_ref<const std::string&>().empty()) throw Fail{"Pod.metadata.name", "empty"};
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
    throw Fail{"body", fmt::format("expected an object, got {}", type_name(root_type))};
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
    throw Fail{"", "malformed JSON: content after the top-level object"};
  }

  ExtenderArgs a;
  if (!pod_text || *pod_text == "null") throw Fail{"Pod", "missing"};
  a.pod = read_pod(*pod_text);
  if (nodes.error) throw *nodes.error;
  if (names.error) throw *names.error;
  a.node_texts = std::move(nodes.items);
  a.node_names = std::move(names.names);
  if (!a.node_texts && !a.node_names) throw Fail{"Nodes", "neither Nodes nor NodeNames is set"};
  a.source = std::move(source);
  return a;
}

// --- the quick path -------------------------------------------------------
// For a body the DOM parser has validated: the DOM answers which keys count
// (with the reference's key rules) and every name; one On-Demand pass then
// cuts out the Pod's text and each node item's text, stepping over values
// unread. Anything outside the common shape returns nullopt, and the
// thorough walk decides (with its messages).

namespace dom = simdjson::dom;

// The chosen field under the reference's key rules: its index among the
// object's fields (-1 = absent) and value.
struct Chosen {
  int index = -1;
  dom::element value;
};

template <size_t N>
std::array<Chosen, N> choose(dom::object object, const std::array<std::string_view, N>& wanted) {
  std::vector<KeyChoice> keys(wanted.begin(), wanted.end());
  std::array<Chosen, N> out;
  int i = 0;
  for (dom::key_value_pair field : object) {
    for (size_t k = 0; k < N; ++k)
      if (keys[k].offer(field.key)) out[k] = Chosen{i, field.value};
    ++i;
  }
  return out;
}

std::optional<std::string> quick_item_name(dom::element item) {
  dom::object obj;
  if (item.get_object().get(obj) != simdjson::SUCCESS) return std::nullopt;
  const Chosen meta = choose<1>(obj, {"metadata"})[0];
  dom::object meta_obj;
  if (meta.index < 0 || meta.value.get_object().get(meta_obj) != simdjson::SUCCESS) return std::nullopt;
  const Chosen name = choose<1>(meta_obj, {"name"})[0];
  std::string_view text;
  if (name.index < 0 || name.value.get_string().get(text) != simdjson::SUCCESS || text.empty()) return std::nullopt;
  return std::string(text);
}

std::optional<ExtenderArgs> read_args_quick(std::shared_ptr<const std::string> source, size_t length,
                                            dom::element root) {
  dom::object root_obj;
  if (root.get_object().get(root_obj) != simdjson::SUCCESS) return std::nullopt;
  const auto [pod, nodes, names] = choose<3>(root_obj, {"Pod", "Nodes", "NodeNames"});
  if (pod.index < 0 || pod.value.is_null()) return std::nullopt;

  ExtenderArgs a;
  int items_index = -1;  // in Nodes' fields
  std::vector<std::string> item_names;
  if (nodes.index >= 0 && !nodes.value.is_null()) {
    dom::object nodes_obj;
    if (nodes.value.get_object().get(nodes_obj) != simdjson::SUCCESS) return std::nullopt;
    const Chosen items = choose<1>(nodes_obj, {"items"})[0];
    if (items.index >= 0 && !items.value.is_null()) {
      dom::array arr;
      if (items.value.get_array().get(arr) != simdjson::SUCCESS) return std::nullopt;
      item_names.reserve(arr.size());
      for (dom::element item : arr) {
        std::optional<std::string> name = quick_item_name(item);
        if (!name) return std::nullopt;
        item_names.push_back(std::move(*name));
      }
      items_index = items.index;
    }
    a.node_texts.emplace();
  }
  if (names.index >= 0 && !names.value.is_null()) {
    dom::array arr;
    if (names.value.get_array().get(arr) != simdjson::SUCCESS) return std::nullopt;
    a.node_names.emplace();
    a.node_names->reserve(arr.size());
    for (dom::element e : arr) {
      std::string_view name;
      if (e.get_string().get(name) != simdjson::SUCCESS) return std::nullopt;
      a.node_names->emplace_back(name);
    }
  }
  if (!a.node_texts && !a.node_names) return std::nullopt;

  // The texts: the Pod's, and each item's when there are items.
  od::parser& parser = ondemand_parser();
  if (parser.capacity() < length && parser.allocate(length + length / 4) != simdjson::SUCCESS) return std::nullopt;
  od::document doc;
  od::object doc_root;
  if (parser.iterate(source->data(), length, source->size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(doc_root) != simdjson::SUCCESS)
    return std::nullopt;
  std::string_view pod_text;
  std::vector<std::string_view> item_texts;
  const int last = std::max(pod.index, items_index >= 0 ? nodes.index : -1);
  int i = 0;
  for (auto f : doc_root) {
    if (i > last) break;
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return std::nullopt;
    if (i == pod.index) {
      if (simdjson::to_json_string(field.value()).get(pod_text) != simdjson::SUCCESS) return std::nullopt;
    } else if (i == nodes.index && items_index >= 0) {
      od::object nodes_obj;
      if (field.value().get_object().get(nodes_obj) != simdjson::SUCCESS) return std::nullopt;
      int j = 0;
      for (auto nf : nodes_obj) {
        od::field nfield;
        if (std::move(nf).get(nfield) != simdjson::SUCCESS) return std::nullopt;
        if (j++ != items_index) continue;
        od::array arr;
        if (nfield.value().get_array().get(arr) != simdjson::SUCCESS) return std::nullopt;
        item_texts.reserve(item_names.size());
        for (auto e : arr) {
          od::value item;
          std::string_view text;
          // NOLINTNEXTLINE(performance-move-const-arg): simdjson_result::get() is &&-qualified
          if (std::move(e).get(item) != simdjson::SUCCESS ||
              simdjson::to_json_string(item).get(text) != simdjson::SUCCESS)
            return std::nullopt;
          item_texts.push_back(text);
        }
      }
    }
    ++i;
  }
  if (pod_text.empty() || item_texts.size() != item_names.size()) return std::nullopt;
  a.pod = read_pod(pod_text);  // a Fail here: the thorough walk reports it
  a.node_texts->reserve(item_names.size());
  for (size_t k = 0; k < item_names.size(); ++k)
    a.node_texts->push_back(NodeText{std::move(item_names[k]), item_texts[k]});
  a.source = std::move(source);
  return a;
}

// True when the padded text is well-formed JSON nested at most kMaxJsonDepth
// deep (simdjson's DOM parser: validates everything at GB/s).
bool well_formed(simdjson::dom::parser& parser, const std::string& padded, size_t length, dom::element* root) {
  if (parser.capacity() < length || parser.max_depth() != static_cast<size_t>(kMaxJsonDepth)) {
    // Headroom, so that a slowly growing node list does not reallocate on
    // every request.
    if (parser.allocate(std::max<size_t>(length + length / 4, 4096), kMaxJsonDepth) != simdjson::SUCCESS) return false;
  }
  return parser.parse(padded.data(), length, false).get(*root) == simdjson::SUCCESS;
}

std::shared_ptr<std::string> padded_copy(std::string_view body) {
  auto source = std::make_shared<std::string>();
  source->reserve(body.size() + simdjson::SIMDJSON_PADDING);
  source->append(body);
  source->append(simdjson::SIMDJSON_PADDING, ' ');
  return source;
}

WireResult<ExtenderArgs> read_guarded(std::shared_ptr<const std::string> source, size_t length) {
  try {
    return read_args(std::move(source), length);
  } catch (const Fail& f) {
    return WireError{f.field, f.message};
  } catch (const std::exception& e) {
    return WireError{"", fmt::format("invalid body: {}", e.what())};
  } catch (...) {
    return WireError{"", "invalid body"};
  }
}

}  // namespace

WireResult<ExtenderArgs> parse_extender_args_fast(std::string_view body) {
  std::shared_ptr<std::string> source = padded_copy(body);
  // The common case, a well-formed body with the expected shape, takes the
  // quick path; anything else (malformed, too deep, a wrong type, a missing
  // name) is read again thoroughly, whose answer and message are the reference.
  thread_local simdjson::dom::parser validator;
  std::optional<ExtenderArgs> quick;
  dom::element root;
  if (well_formed(validator, *source, body.size(), &root)) {
    try {
      quick = read_args_quick(source, body.size(), root);
    } catch (const std::exception&) {  // e.g. the Pod is not a usable object
    } catch (const Fail&) {
    }
  }
  WireResult<ExtenderArgs> out =
      quick ? WireResult<ExtenderArgs>(std::move(*quick)) : read_guarded(source, body.size());
  if (validator.capacity() > kRetainedParserBytes) validator = simdjson::dom::parser{};
  release_if_large(ondemand_parser());
  return out;
}

WireResult<ExtenderArgs> parse_extender_args_thorough(std::string_view body) {
  return read_guarded(padded_copy(body), body.size());
}

}  // namespace gpupack

// One definition of each thing: no two places in src/ define a type (struct,
// class, enum, alias) of the same qualified name outside an anonymous
// namespace. Two such definitions in different translation units are an ODR
// violation the compiler does not report: which one a caller sees depends on
// the link order (this once gave `config mig` the wrong default).
// And no two .cc files of src/ define the same name (type, function,
// variable, alias) in an anonymous namespace: the unity build (GPUPACK_UNITY)
// compiles 8 files as one, and which files share a batch shifts whenever a
// file is added, so such a pair would fail to compile (a redefinition, an
// ambiguous call) only in some builds.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Source text with comments, string and character literals blanked out.
std::string strip(const std::string& in) {
  std::string out = in;
  enum { kCode, kLine, kBlock, kString, kChar, kRaw } mode = kCode;
  std::string raw_end;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    const char next = i + 1 < in.size() ? in[i + 1] : '\0';
    switch (mode) {
      case kCode:
        if (c == '/' && next == '/')
          mode = kLine, out[i] = ' ';
        else if (c == '/' && next == '*')
          mode = kBlock, out[i] = ' ';
        else if (c == 'R' && next == '"' && (i == 0 || !std::isalnum(static_cast<unsigned char>(in[i - 1])))) {
          const size_t open = in.find('(', i + 2);
          raw_end = ")" + in.substr(i + 2, open - i - 2) + "\"";
          mode = kRaw;
        } else if (c == '"')
          mode = kString;
        else if (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(in[i - 1]))))
          mode = kChar;
        break;
      case kLine:
        if (c == '\n')
          mode = kCode;
        else
          out[i] = ' ';
        break;
      case kBlock:
        if (c == '*' && next == '/')
          mode = kCode, out[i] = out[i + 1] = ' ', ++i;
        else if (c != '\n')
          out[i] = ' ';
        break;
      case kString:
      case kChar:
        if (c == '\\')
          out[i] = ' ', out[i + 1] = ' ', ++i;
        else if (c == (mode == kString ? '"' : '\''))
          mode = kCode;
        else if (c != '\n')
          out[i] = ' ';
        break;
      case kRaw:
        if (in.compare(i, raw_end.size(), raw_end) == 0) {
          for (size_t k = 0; k < raw_end.size(); ++k) out[i + k] = ' ';  // its ")" opened in the blanked part
          i += raw_end.size() - 1, mode = kCode;
        } else if (c != '\n')
          out[i] = ' ';
        break;
    }
  }
  return out;
}

std::vector<std::string> tokens(const std::string& code) {
  std::vector<std::string> out;
  for (size_t i = 0; i < code.size();) {
    const unsigned char c = static_cast<unsigned char>(code[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (std::isalnum(c) || c == '_') {
      size_t j = i;
      while (j < code.size() && (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_')) ++j;
      out.push_back(code.substr(i, j - i));
      i = j;
    } else if (c == ':' && i + 1 < code.size() && code[i + 1] == ':') {
      out.push_back("::");
      i += 2;
    } else if (c == '#') {  // skip preprocessor lines
      while (i < code.size() && code[i] != '\n') i += code[i] == '\\' ? 2 : 1;
    } else {
      out.push_back(std::string(1, code[i]));
      ++i;
    }
  }
  return out;
}

// The scopes around each token of a file: step() consumes a namespace head
// (up to its "{", or an alias or using-directive up to its ";") or a brace
// and returns true; any other token is the caller's.
class ScopeWalker {
 public:
  bool step(const std::vector<std::string>& t, size_t& i) {
    if (t[i] == "namespace") {
      namespace_open_ = true;
      pending_.clear();
      size_t j = i + 1;
      for (; j < t.size() && t[j] != "{" && t[j] != "=" && t[j] != ";"; ++j) pending_ += t[j];
      if (j < t.size() && t[j] != "{") namespace_open_ = false;  // alias or using-directive
      i = j - 1;
      return true;
    }
    if (t[i] == "{") {
      scopes_.push_back(namespace_open_ ? pending_ : "{}");  // "a::b" is one scope closed by one brace
      namespace_open_ = false;
      return true;
    }
    if (t[i] == "}") {
      if (!scopes_.empty()) scopes_.pop_back();
      return true;
    }
    return false;
  }
  // Inside named namespaces only.
  bool at_namespace_scope() const {
    for (const std::string& s : scopes_)
      if (s == "{}" || s.empty()) return false;
    return true;
  }
  // Inside namespaces, one of them anonymous.
  bool in_anonymous() const {
    bool anonymous = false;
    for (const std::string& s : scopes_) {
      if (s == "{}") return false;
      anonymous |= s.empty();
    }
    return anonymous;
  }
  std::string qualified(const std::string& name) const {
    std::string q;
    for (const std::string& s : scopes_) q += s + "::";
    return q + name;
  }

 private:
  std::vector<std::string> scopes_;  // namespace name; "" anonymous; "{}" any other brace
  std::string pending_;
  bool namespace_open_ = false;
};

// Qualified names of the types defined at namespace scope (outside anonymous
// namespaces) in one file.
std::vector<std::string> namespace_scope_types(const std::string& text) {
  const std::vector<std::string> t = tokens(strip(text));
  ScopeWalker walk;
  std::vector<std::string> found;
  for (size_t i = 0; i < t.size(); ++i) {
    if (walk.step(t, i) || !walk.at_namespace_scope()) continue;
    const bool type_kw = t[i] == "struct" || t[i] == "class" || t[i] == "union" || t[i] == "enum";
    if (type_kw && (i == 0 || (t[i - 1] != "enum" && t[i - 1] != "friend" && t[i - 1] != "<" && t[i - 1] != ","))) {
      size_t j = i + 1;
      if (t[i] == "enum" && j < t.size() && (t[j] == "class" || t[j] == "struct")) ++j;
      if (j >= t.size()) continue;
      const std::string name = t[j];
      // Skip attributes/final and find whether a body follows: "{" or ":" base list then "{".
      size_t k = j + 1;
      while (k < t.size() && (t[k] == "final")) ++k;
      if (k < t.size() && (t[k] == "{" || t[k] == ":")) {
        while (k < t.size() && t[k] != "{" && t[k] != ";") ++k;
        if (k < t.size() && t[k] == "{") found.push_back(walk.qualified(name));
      }
    } else if (t[i] == "using" && i + 2 < t.size() && t[i + 2] == "=") {
      found.push_back(walk.qualified(t[i + 1]));
    }
  }
  return found;
}

// Names defined in an anonymous namespace of one file, outside any function
// or class body: types and variables by name, functions as name/parameters
// (overloads of another arity can share a unit), aliases as
// name=definition (the same alias twice is allowed).
std::set<std::string> anonymous_scope_names(const std::string& text) {
  const std::vector<std::string> t = tokens(strip(text));
  ScopeWalker walk;
  std::set<std::string> found;
  auto identifier = [](const std::string& s) {
    return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
  };
  static const std::set<std::string> kNotNames = {
      "operator",      "return",  "if",       "for",      "while",    "switch",   "sizeof", "decltype",
      "static_assert", "alignof", "noexcept", "requires", "template", "typename", "const",  "constexpr",
      "static",        "inline",  "class",    "struct",   "union",    "enum"};
  int parens = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (walk.step(t, i)) continue;
    if (t[i] == "(") ++parens;
    if (t[i] == ")") --parens;
    if (parens != 0 || !walk.in_anonymous()) continue;
    if (t[i] == "template" && i + 1 < t.size() && t[i + 1] == "<") {  // skip the parameter list
      int angle = 0;
      size_t j = i + 1;
      for (; j < t.size(); ++j) {
        if (t[j] == "<") ++angle;
        if (t[j] == ">" && --angle == 0) break;
      }
      i = j;
      continue;
    }
    if (i + 1 >= t.size() || !identifier(t[i]) || kNotNames.count(t[i])) continue;
    const std::string& prev = i > 0 ? t[i - 1] : std::string();
    const std::string& next = t[i + 1];
    if (prev == "struct" || prev == "class" || prev == "union" || prev == "enum") {
      size_t k = i + 1;
      while (k < t.size() && t[k] != "{" && t[k] != ";") ++k;
      if (k < t.size() && t[k] == "{") found.insert(t[i]);
    } else if (prev == "using" && next == "=") {  // name=definition: the same alias twice is allowed
      std::string definition;
      for (size_t k = i + 2; k < t.size() && t[k] != ";"; ++k) definition += t[k];
      found.insert(t[i] + "=" + definition);
    } else if (next == "(" && prev != "::" && prev != "." && prev != "->" && prev != "~") {
      // A function definition: its parameter list, then a body before any
      // ';'. Recorded as name/parameters: overloads of another arity can
      // share a unit.
      int depth = 0, angle = 0, commas = 0;
      bool any = false;
      size_t k = i + 1;
      for (; k < t.size(); ++k) {
        if (t[k] == "(" && ++depth == 1) continue;
        if (t[k] == ")" && --depth == 0) break;
        if (t[k] == "<") ++angle;
        if (t[k] == ">") --angle;
        if (depth == 1 && angle == 0 && t[k] == ",") ++commas;
        any |= t[k] != "void";
      }
      const int params = any ? commas + 1 : 0;
      while (k < t.size() && t[k] != "{" && t[k] != ";" && t[k] != "=") ++k;
      if (k < t.size() && t[k] == "{") found.insert(t[i] + "/" + std::to_string(params));
    } else if ((next == "=" || next == "{" || next == "[") &&
               (identifier(prev) || prev == ">" || prev == "*" || prev == "&")) {
      if (prev != "using" && prev != "namespace") found.insert(t[i]);  // a variable
    }
  }
  return found;
}

TEST(OneDefinition, TheScannerSeesTypesAndSkipsAnonymousNamespaces) {
  const auto found = namespace_scope_types(R"(
    namespace gpupack {
    struct A { int x = 0; };          // counted
    struct Fwd;                       // a declaration, not a definition
    using Map = std::map<int, int>;   // counted
    enum class Kind { kA };           // counted
    class B : public A { struct Inner {}; };  // B counted, Inner is not at namespace scope
    namespace { struct Hidden {}; }   // anonymous: private to the file
    void f() { struct Local {}; }
    namespace detail { struct D {}; }
    }  // namespace gpupack
    namespace gpupack::cli { struct C {}; }
    namespace gpupack {
    // struct InComment {};
    const char* s = "struct InString {};";
    }  // namespace gpupack
  )");
  const std::vector<std::string> want = {"gpupack::A", "gpupack::Map",       "gpupack::Kind",
                                         "gpupack::B", "gpupack::detail::D", "gpupack::cli::C"};
  EXPECT_EQ(found, want);
}

TEST(OneDefinition, NoTypeIsDefinedTwiceInSrc) {
  const fs::path root = fs::path(GPUPACK_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  std::map<std::string, std::set<std::string>> where;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const auto ext = entry.path().extension();
    if (ext != ".h" && ext != ".cc") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    ++files;
    for (const std::string& name : namespace_scope_types(ss.str()))
      where[name].insert(fs::relative(entry.path(), root).string());
  }
  EXPECT_GT(files, 50);
  EXPECT_GT(where.size(), 100u);  // the scanner really finds the project's types
  for (const auto& [name, files_defining] : where) {
    std::string list;
    for (const auto& f : files_defining) list += " " + f;
    EXPECT_EQ(files_defining.size(), 1u) << name << " is defined in more than one place:" << list;
  }
}

TEST(OneDefinition, TheAnonymousScopeScannerSeesEachKindOfName) {
  const auto found = anonymous_scope_names(R"src(
    namespace gpupack {
    struct Public {};                      // not anonymous
    void public_function() {}
    namespace {
    struct Helper { int member = 0; void method() {} };
    using Alias = std::vector<int>;
    constexpr int kLimit = 4;
    const std::array<int, 2> kPair{1, 2};
    template <typename T, int N = 3>
    T twice(T x) { return x + x; }
    std::string trim(std::string_view s, int unused = 0) {
      const int local = 1;
      auto lambda = [&](int y) { return y; };
      return std::string(s);
    }
    int declared_only(int x);
    bool operator==(const Helper&, const Helper&) { return true; }
    const std::string kName = format("{}", 1);
    bool matches(std::string_view s) { return std::regex_match(std::string(s), std::regex(R"(^(a|b)+$)")); }
    enum class After { kRawString };
    }  // namespace
    }  // namespace gpupack
  )src");
  const std::set<std::string> want = {
      "Helper", "Alias=std::vector<int>", "kLimit", "kPair", "twice/1", "trim/2", "kName", "matches/1", "After"};
  EXPECT_EQ(found, want);
}

TEST(OneDefinition, NoAnonymousNameIsDefinedInTwoSourceFiles) {
  const fs::path root = fs::path(GPUPACK_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  std::map<std::string, std::set<std::string>> where;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".cc") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    for (const std::string& name : anonymous_scope_names(ss.str()))
      where[name].insert(fs::relative(entry.path(), root).string());
  }
  EXPECT_GT(where.size(), 200u);                         // the scanner really finds the files' helpers
  std::map<std::string, std::set<std::string>> aliases;  // alias name -> its definitions
  for (const auto& [key, files_defining] : where)
    if (const size_t eq = key.find('='); eq != std::string::npos) aliases[key.substr(0, eq)].insert(key);
  for (const auto& [name, definitions] : aliases) {
    std::string list;
    for (const auto& d : definitions)
      for (const auto& f : where[d]) list += " " + f;
    EXPECT_EQ(definitions.size(), 1u) << name
                                      << " is an alias of different types in anonymous namespaces of src/:" << list;
    // An alias and a type or variable of the same name clash as well.
    std::string other;
    if (const auto it = where.find(name); it != where.end())
      for (const auto& f : it->second) other += " " + f;
    EXPECT_TRUE(other.empty()) << name << " is an alias in" << list << " and defined otherwise in" << other;
  }
  for (const auto& [key, files_defining] : where) {
    if (key.find('=') != std::string::npos) continue;
    std::string list;
    for (const auto& f : files_defining) list += " " + f;
    EXPECT_EQ(files_defining.size(), 1u) << key
                                         << " is defined in an anonymous namespace of more than one file:" << list
                                         << " (rename one, or share one definition through a header)";
  }
}

}  // namespace

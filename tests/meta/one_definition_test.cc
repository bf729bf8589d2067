// One definition of each thing: no two places in src/ define a type (struct,
// class, enum, alias) of the same qualified name outside an anonymous
// namespace. Two such definitions in different translation units are an ODR
// violation the compiler does not report: which one a caller sees depends on
// the link order (this once gave `config mig` the wrong default).
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
        if (in.compare(i, raw_end.size(), raw_end) == 0)
          i += raw_end.size() - 1, mode = kCode;
        else if (c != '\n')
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

// Qualified names of the types defined at namespace scope (outside anonymous
// namespaces) in one file.
std::vector<std::string> namespace_scope_types(const std::string& text) {
  const std::vector<std::string> t = tokens(strip(text));
  struct Scope {
    std::string name;  // namespace name; "" for anonymous; "{}" for any other brace
  };
  std::vector<Scope> scopes;
  std::vector<std::string> found;
  auto at_namespace_scope = [&] {
    for (const Scope& s : scopes)
      if (s.name == "{}" || s.name.empty()) return false;
    return true;
  };
  auto qualified = [&](const std::string& name) {
    std::string q;
    for (const Scope& s : scopes) q += s.name + "::";
    return q + name;
  };
  std::string pending_namespace;
  bool namespace_open = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == "namespace") {
      namespace_open = true;
      pending_namespace.clear();
      size_t j = i + 1;
      for (; j < t.size() && t[j] != "{" && t[j] != "=" && t[j] != ";"; ++j) pending_namespace += t[j];
      if (j < t.size() && t[j] != "{") namespace_open = false;  // alias or using-directive
      i = j - 1;
      continue;
    }
    if (t[i] == "{") {
      if (namespace_open) {
        scopes.push_back({pending_namespace});  // "a::b" is one scope closed by one brace
        namespace_open = false;
      } else {
        scopes.push_back({"{}"});
      }
      continue;
    }
    if (t[i] == "}") {
      if (!scopes.empty()) scopes.pop_back();
      continue;
    }
    if (!at_namespace_scope()) continue;
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
        if (k < t.size() && t[k] == "{") found.push_back(qualified(name));
      }
    } else if (t[i] == "using" && i + 2 < t.size() && t[i + 2] == "=") {
      found.push_back(qualified(t[i + 1]));
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

}  // namespace

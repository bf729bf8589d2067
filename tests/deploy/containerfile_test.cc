// Containerfile, checked at the syntax level (no image is built by the
// tests): known instructions only, a multi-stage build on Debian bookworm
// whose build stage runs scripts/install-deps.sh and CMake, and a runtime
// stage that copies only the binary from it, runs as a numeric non-root user
// and has gpupack as its exec-form entrypoint.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gpupack {
namespace {

struct Instruction {
  std::string op;    // upper case
  std::string args;  // continuation lines joined
  int line = 0;
};

struct Stage {
  std::string from, name;
  std::vector<Instruction> body;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses Dockerfile syntax: comments, blank lines, backslash continuations.
std::vector<Instruction> parse(const std::string& text) {
  std::vector<Instruction> out;
  std::istringstream lines(text);
  std::string line, pending;
  int n = 0, start = 0;
  while (std::getline(lines, line)) {
    ++n;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (pending.empty()) start = n;
    const bool more = !line.empty() && line.back() == '\\';
    pending += (pending.empty() ? "" : " ") + line.substr(first, line.size() - first - (more ? 1 : 0));
    if (more) continue;
    Instruction i;
    const size_t sp = pending.find_first_of(" \t");
    i.op = pending.substr(0, sp);
    for (auto& c : i.op) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    i.args = sp == std::string::npos ? "" : pending.substr(pending.find_first_not_of(" \t", sp));
    i.line = start;
    out.push_back(i);
    pending.clear();
  }
  EXPECT_TRUE(pending.empty()) << "a continuation runs past the end of the file";
  return out;
}

class Containerfile : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string text = read_text(std::string(GPUPACK_SOURCE_DIR) + "/Containerfile");
    ASSERT_FALSE(text.empty());
    for (const auto& i : parse(text)) {
      if (i.op == "ARG" && stages.empty()) {
        const size_t eq = i.args.find('=');
        args[i.args.substr(0, eq)] = eq == std::string::npos ? "" : i.args.substr(eq + 1);
        continue;
      }
      if (i.op == "FROM") {
        Stage s;
        std::istringstream f(i.args);
        std::string as;
        f >> s.from >> as >> s.name;
        if (!as.empty()) {
          EXPECT_EQ(as, "AS") << "line " << i.line;
        }
        stages.push_back(s);
        continue;
      }
      ASSERT_FALSE(stages.empty()) << "line " << i.line << ": " << i.op << " before FROM";
      stages.back().body.push_back(i);
    }
  }
  // FROM with the file's leading ARGs substituted.
  std::string base(const Stage& s) const {
    std::string out = s.from;
    for (const auto& [k, v] : args) {
      for (const std::string& ref : {"${" + k + "}", "$" + k}) {
        for (size_t p; (p = out.find(ref)) != std::string::npos;) out.replace(p, ref.size(), v);
      }
    }
    return out;
  }
  std::vector<Stage> stages;
  std::map<std::string, std::string> args;
};

TEST_F(Containerfile, UsesOnlyKnownInstructions) {
  static const std::set<std::string> known = {"FROM", "RUN",        "CMD",         "LABEL",  "EXPOSE", "ENV",
                                              "ADD",  "COPY",       "ENTRYPOINT",  "VOLUME", "USER",   "WORKDIR",
                                              "ARG",  "STOPSIGNAL", "HEALTHCHECK", "SHELL",  "ONBUILD"};
  for (const auto& s : stages) {
    for (const auto& i : s.body) {
      EXPECT_TRUE(known.count(i.op)) << "line " << i.line << ": " << i.op;
      EXPECT_NE(i.op, "ADD") << "line " << i.line << ": COPY, not ADD (no remote fetches, no auto-extraction)";
    }
  }
}

TEST_F(Containerfile, BuildsOnBookwormWithTheProjectScripts) {
  ASSERT_EQ(stages.size(), 2u);
  for (const auto& s : stages) {
    const std::string b = base(s);
    EXPECT_TRUE(b.find("debian:bookworm") != std::string::npos) << b;
  }
  const Stage& build = stages[0];
  EXPECT_FALSE(build.name.empty());
  std::string runs;
  for (const auto& i : build.body) {
    if (i.op == "RUN") runs += i.args + "\n";
  }
  EXPECT_NE(runs.find("scripts/install-deps.sh"), std::string::npos);
  EXPECT_NE(runs.find("cmake -S"), std::string::npos);
  EXPECT_NE(runs.find("--target gpupack"), std::string::npos);
  EXPECT_NE(runs.find("-DGPUPACK_BUILD_TESTS=OFF"), std::string::npos);
  EXPECT_NE(runs.find("deploy/image/runtime-packages.sh"), std::string::npos);
}

TEST_F(Containerfile, RuntimeStageIsMinimalAndNonRoot) {
  ASSERT_EQ(stages.size(), 2u);
  const Stage& rt = stages[1];
  EXPECT_TRUE(base(rt).ends_with("bookworm-slim")) << base(rt);
  std::string user, entrypoint;
  for (const auto& i : rt.body) {
    if (i.op == "USER") user = i.args;
    if (i.op == "ENTRYPOINT") entrypoint = i.args;
    if (i.op == "COPY" && i.args.find("--from=") != std::string::npos) {
      // Only the binary and the package list come from the build stage.
      EXPECT_NE(i.args.find("--from=" + stages[0].name + " "), std::string::npos) << i.args;
      EXPECT_TRUE(i.args.find("/out/gpupack ") != std::string::npos ||
                  i.args.find("/out/runtime-packages ") != std::string::npos)
          << i.args;
    } else if (i.op == "COPY") {
      ADD_FAILURE() << "line " << i.line << ": the runtime stage copies from the build context";
    }
    if (i.op == "RUN") {
      EXPECT_NE(i.args.find("--no-install-recommends"), std::string::npos) << i.args;
    }
  }
  // Numeric uid:gid, not root: runAsNonRoot can verify a number only.
  ASSERT_FALSE(user.empty());
  const size_t colon = user.find(':');
  const std::string uid = user.substr(0, colon);
  ASSERT_FALSE(uid.empty());
  EXPECT_EQ(uid.find_first_not_of("0123456789"), std::string::npos) << user;
  EXPECT_GT(std::stol(uid), 0);
  if (colon != std::string::npos) {
    EXPECT_EQ(user.substr(colon + 1).find_first_not_of("0123456789"), std::string::npos) << user;
  }
  // Exec form (a JSON array), so signals reach gpupack directly.
  const auto ep = nlohmann::json::parse(entrypoint, nullptr, false);
  ASSERT_TRUE(ep.is_array() && ep.size() == 1) << entrypoint;
  EXPECT_EQ(ep[0].get<std::string>(), "/usr/local/bin/gpupack");
  // USER and ENTRYPOINT come after the last RUN (nothing runs as root later
  // by accident, and the user applies to the entrypoint).
  int last_run = -1, user_at = -1;
  for (size_t k = 0; k < rt.body.size(); ++k) {
    if (rt.body[k].op == "RUN") last_run = static_cast<int>(k);
    if (rt.body[k].op == "USER") user_at = static_cast<int>(k);
  }
  EXPECT_GT(user_at, last_run);
}

TEST(Dockerignore, KeepsBuildTreesAndVcsOutOfTheContext) {
  const std::string text = read_text(std::string(GPUPACK_SOURCE_DIR) + "/.dockerignore");
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.insert(l);
  for (const char* p : {".git", "build", "build-*", "report"}) EXPECT_TRUE(lines.count(p)) << p;
}

}  // namespace
}  // namespace gpupack

// The layering of the build (ARCHITECTURE.md): the judge links and compiles no code of model/ or
// kernels/, and includes none of their headers. The rules are first shown to catch each way of
// breaking them on small made-up graphs and folders; then this build's own target graph (from
// CMake's file API, in a scratch configure of the same options) and source tree must obey them.
// DIT_TARGET_GRAPH_BUILD_DIR names another build tree whose file API reply to check instead
// (another checkout, for example), and DIT_TARGET_GRAPH_SOURCE_DIR its source tree.
#include "tests/architecture/layering.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/scratch_directory.h"

namespace dit::architecture {
namespace {

namespace fs = std::filesystem;

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "  " + line + "\n";
  return text;
}

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& line : lines) {
    if (line.find(what) != std::string::npos) return true;
  }
  return false;
}

Target target(const std::string& name, const std::string& type, const std::string& folder,
              std::vector<std::string> sources = {}, std::vector<std::string> dependencies = {}) {
  Target t;
  t.id = name + "::@id";
  t.name = name;
  t.type = type;
  t.folder = folder;
  t.sources = std::move(sources);
  for (const std::string& d : dependencies) t.dependency_ids.push_back(d + "::@id");
  if (type == "STATIC_LIBRARY") t.artifacts.push_back(folder + "/lib" + name + ".a");
  if (type == "EXECUTABLE") t.artifacts.push_back(folder + "/" + name);
  return t;
}

// A graph shaped like the project's: core, the engine, the judge, the renderer, a benchmark.
TargetGraph healthy_graph() {
  TargetGraph graph;
  graph.source_dir = "/src";
  graph.build_dir = "/src/build";
  graph.targets = {
      target("dit_core", "STATIC_LIBRARY", "core", {"core/files.cpp"}),
      target("dit_kernels", "STATIC_LIBRARY", "kernels", {"kernels/noise.cpp"}, {"dit_core"}),
      target("dit_engine", "STATIC_LIBRARY", "model", {"model/pipeline.cpp"}, {"dit_core", "dit_kernels"}),
      target("dit_quality", "STATIC_LIBRARY", "quality", {"quality/gate.cpp"}, {"dit_core"}),
      target("dit_quality_renderer", "STATIC_LIBRARY", "quality", {"quality/renderer/render.cpp"},
             {"dit_quality", "dit_engine"}),
      target("dit-quality-render", "EXECUTABLE", "quality", {"quality/renderer/main.cpp"}, {"dit_quality_renderer"}),
      // The judge is built after the renderer it runs (an order dependency, not a link).
      target("dit-quality", "EXECUTABLE", "quality", {"quality/main.cpp"}, {"dit_quality", "dit-quality-render"}),
      target("dit_ar_core", "STATIC_LIBRARY", "driver", {"driver/config.cpp"}, {"dit_core"}),
      target("dit-ar", "EXECUTABLE", "driver", {"driver/main.cpp"}, {"dit_ar_core"}),
      target("dit-perf-gate", "EXECUTABLE", "driver", {"driver/perf_gate_main.cpp"}, {"dit_ar_core"}),
      target("bench_e2e", "EXECUTABLE", "bench", {"bench/bench_e2e.cpp"}, {"dit_quality_renderer"}),
      target("files_test", "EXECUTABLE", "tests/core", {"tests/core/files_test.cpp"}, {"dit_engine"}),
  };
  for (Target& t : graph.targets) {
    if (t.type == "EXECUTABLE" && t.name == "dit-quality")
      t.link_libraries = {"quality/libdit_quality.a", "core/libdit_core.a", "-lpthread"};
  }
  return graph;
}

Target& named(TargetGraph& graph, const std::string& name) {
  for (Target& t : graph.targets) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no target " + name);
}

TEST(LayeringRules, a_graph_shaped_like_the_project_passes) {
  const std::vector<std::string> violations = layering_violations(healthy_graph(), true);
  EXPECT_TRUE(violations.empty()) << joined(violations);
}

TEST(LayeringRules, each_way_of_reaching_the_engine_from_the_judge_is_caught) {
  struct Case {
    const char* name;
    void (*edit)(TargetGraph&);
    const char* expected;
  };
  const Case cases[] = {
      {"judge_links_the_engine",
       [](TargetGraph& g) { named(g, "dit_quality").dependency_ids.push_back("dit_engine::@id"); },
       "dit_quality (quality-judge) links dit_engine"},
      {"judge_links_the_renderer",
       [](TargetGraph& g) { named(g, "dit-quality").dependency_ids.push_back("dit_quality_renderer::@id"); },
       "dit-quality (quality-judge) links dit_engine"},
      {"core_compiles_an_engine_file", [](TargetGraph& g) { named(g, "dit_core").sources.push_back("model/evil.cpp"); },
       "dit_core (core) compiles model/evil.cpp"},
      {"driver_compiles_a_kernel_through_its_library",
       [](TargetGraph& g) { named(g, "dit_ar_core").sources.push_back("kernels/evil.cu"); },
       "dit-ar (driver) compiles kernels/evil.cu through dit_ar_core"},
      {"a_link_line_names_an_engine_archive",
       [](TargetGraph& g) { named(g, "dit-perf-gate").link_libraries.push_back("/src/build/model/libdit_engine.a"); },
       "dit-perf-gate (driver) links dit_engine"},
      {"a_link_line_names_an_unknown_archive_in_model",
       [](TargetGraph& g) { named(g, "dit-perf-gate").link_libraries.push_back("model/libmystery.a"); },
       "dit-perf-gate (driver) links model/libmystery.a"},
      {"bench_support_links_the_engine",
       [](TargetGraph& g) {
         g.targets.push_back(
             target("dit_bench_support", "STATIC_LIBRARY", "bench", {"bench/support/x.cpp"}, {"dit_engine"}));
       },
       "dit_bench_support (bench-support) links dit_engine"},
      {"a_tool_outside_every_part_links_the_engine",
       [](TargetGraph& g) {
         g.targets.push_back(target("tool", "EXECUTABLE", "tools", {"tools/t.cpp"}, {"dit_engine"}));
       },
       "tool (other) links dit_engine"},
      {"the_judge_is_missing",
       [](TargetGraph& g) { std::erase_if(g.targets, [](const Target& t) { return t.name == "dit-quality"; }); },
       "dit-quality: missing from the build"},
  };
  for (const Case& c : cases) {
    TargetGraph graph = healthy_graph();
    c.edit(graph);
    const std::vector<std::string> violations = layering_violations(graph, true);
    EXPECT_TRUE(mentions(violations, c.expected)) << c.name << ": expected \"" << c.expected << "\" in\n"
                                                  << joined(violations);
  }
}

TEST(LayeringRules, engine_users_are_named_by_part) {
  for (const char* part : {"kernels", "model", "quality-renderer", "bench-engine", "tests", "fuzz"})
    EXPECT_TRUE(may_use_engine(part)) << part;
  for (const char* part : {"core", "quality-judge", "bench-support", "driver", "other"})
    EXPECT_FALSE(may_use_engine(part)) << part;
  EXPECT_EQ(part_of(target("dit-quality-render", "EXECUTABLE", "quality")), "quality-renderer");
  EXPECT_EQ(part_of(target("dit_new_judge_library", "STATIC_LIBRARY", "quality")), "quality-judge");
  EXPECT_EQ(part_of(target("dit_gpu_bench_support", "STATIC_LIBRARY", "bench")), "bench-support");
  EXPECT_EQ(part_of(target("bench_forward", "EXECUTABLE", "bench")), "bench-engine");
  EXPECT_EQ(part_of(target("dit-sample", "EXECUTABLE", "model/cli")), "model");
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(IncludeRules, each_forbidden_include_is_caught_and_the_renderer_is_left_out) {
  const test::ScratchDirectory scratch;
  const fs::path root = scratch.path();
  write_file(root / "core/a.h", "#include <vector>\n#include \"core/b.h\"\n");
  write_file(root / "core/b.cpp", "  #  include \"model/config.h\"\n");
  write_file(root / "driver/c.cpp",
             "#include \"kernels/noise.h\"\n#include \"../model/x.h\"\n#define X <y>\n#include X\n");
  write_file(root / "quality/renderer/render.cpp", "#include \"model/pipeline.h\"\n");
  write_file(root / "quality/gate.cpp", "// #include \"model/pipeline.h\" in a comment is not an include\n");
  write_file(root / "kernels/k.cu", "#include \"kernels/k.h\"\n#include \"model/dit_model.h\"\n");
  write_file(root / "bench/support/s.cpp", "#include \"bench/support/s.h\"\n");
  const std::vector<std::string> violations = include_violations(root, project_include_rules());
  const std::vector<std::string> expected = {
      "core/b.cpp:1: includes model/config.h", "driver/c.cpp:1: includes kernels/noise.h",
      "driver/c.cpp:2: parent-relative include ../model/x.h", "driver/c.cpp:4: computed include X",
      "kernels/k.cu:2: includes model/dit_model.h"};
  for (const std::string& line : expected)
    EXPECT_TRUE(mentions(violations, line)) << line << "\n" << joined(violations);
  EXPECT_EQ(violations.size(), expected.size()) << joined(violations);
}

TEST(EnvironmentRule, every_way_of_reading_the_environment_is_found) {
  const test::ScratchDirectory scratch;
  const fs::path root = scratch.path();
  write_file(root / "model/a.cu", "bool graphs = std::getenv(\"X\") != nullptr;\n");
  write_file(root / "model/cuda/b.cpp", "int f() { return secure_getenv(\"Y\") ? 1 : 0; }\nextern char** environ;\n");
  write_file(root / "kernels/c.h", "// no environment here\ninline void g() { setenv(\"Z\", \"1\", 1); }\n");
  write_file(root / "kernels/d.cpp", "int environment_size = 0;  // not a use: another word\n");
  const std::vector<std::string> found = environment_uses(root, {"model", "kernels"});
  for (const char* where : {"model/a.cu:1:", "model/cuda/b.cpp:1:", "model/cuda/b.cpp:2:", "kernels/c.h:2:"})
    EXPECT_TRUE(mentions(found, where)) << where << "\n" << joined(found);
  EXPECT_EQ(found.size(), 4u) << joined(found);
}

// ---- this build ---------------------------------------------------------------------------------

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

fs::path source_dir() {
  const std::string given = environment("DIT_TARGET_GRAPH_SOURCE_DIR");
  return given.empty() ? fs::path(DIT_SOURCE_DIR) : fs::path(given);
}

// Configures the source tree again into a scratch folder with the file API query in place
// beforehand (CMake answers a query at the start of a configure), with this build's options.
class ThisBuild : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string given = environment("DIT_TARGET_GRAPH_BUILD_DIR");
    if (!given.empty()) {
      graph_ = new TargetGraph(load_target_graph(given));
      return;
    }
    scratch_ = new test::ScratchDirectory();
    const fs::path build = scratch_->path() / "build";
    fs::create_directories(build / ".cmake/api/v1/query");
    std::ofstream(build / ".cmake/api/v1/query/codemodel-v2");
    std::ifstream arguments_file(DIT_SCRATCH_CONFIGURE_ARGUMENTS);
    std::string command =
        std::string("\"") + DIT_CMAKE_COMMAND + "\" -S \"" + DIT_SOURCE_DIR + "\" -B \"" + build.string() + "\"";
    for (std::string argument; std::getline(arguments_file, argument);) {
      if (!argument.empty()) command += " '" + argument + "'";
    }
    const fs::path log = scratch_->path() / "configure.log";
    command += " > \"" + log.string() + "\" 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      configure_error_ = new std::string("the scratch configure failed: " + command + "\n" + text.str());
      return;
    }
    graph_ = new TargetGraph(load_target_graph(build));
  }
  static void TearDownTestSuite() {
    delete graph_;
    delete scratch_;
    delete configure_error_;
    graph_ = nullptr;
    scratch_ = nullptr;
    configure_error_ = nullptr;
  }
  void SetUp() override {
    if (configure_error_) FAIL() << *configure_error_;
  }
  static TargetGraph* graph_;
  static test::ScratchDirectory* scratch_;
  static std::string* configure_error_;
};

TargetGraph* ThisBuild::graph_ = nullptr;
test::ScratchDirectory* ThisBuild::scratch_ = nullptr;
std::string* ThisBuild::configure_error_ = nullptr;

TEST_F(ThisBuild, no_judging_target_links_or_compiles_engine_code) {
  ASSERT_NE(graph_, nullptr);
  ASSERT_GT(graph_->targets.size(), 10u);
  const std::vector<std::string> violations = layering_violations(*graph_, DIT_EXPECT_DRIVER);
  EXPECT_TRUE(violations.empty()) << "targets that break ARCHITECTURE.md's table:\n" << joined(violations);
}

TEST_F(ThisBuild, no_judging_source_includes_engine_headers) {
  const std::vector<std::string> violations = include_violations(source_dir(), project_include_rules());
  EXPECT_TRUE(violations.empty()) << "includes that break ARCHITECTURE.md's table:\n" << joined(violations);
}

TEST(ThisSourceTree, the_engine_reads_no_environment) {
  const std::vector<std::string> found = environment_uses(source_dir(), {"model", "kernels"});
  EXPECT_TRUE(found.empty()) << "the engine takes switches as EngineOptions, never from the environment:\n"
                             << joined(found);
}

}  // namespace
}  // namespace dit::architecture

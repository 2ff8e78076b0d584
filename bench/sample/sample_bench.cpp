// The calendar tools' cost, on the sample's seed data in a calendar file
// (what `switchboard run` uses):
//   BM_SnapshotDirect        what a planning agent does: read the calendar
//   BM_HouseholdThroughTool  what the rule-based nl_parser, resolution and
//                            query do instead: calendar.household with
//                            calendars, its JSON read back into a household
//   BM_BookAndCancel         calendar.book then calendar.cancel of one event
//                            (two transactions), unkeyed
// A hub adds a journal record per call on top (bench/durable measures the
// store's writes).
#include <switchboard/agents/tool.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/scheduling/agents.hpp>
#include <switchboard/scheduling/calendar.hpp>
#include <switchboard/scheduling/household.hpp>
#include <switchboard/scheduling/tools.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace {

namespace sb = switchboard;
namespace fs = std::filesystem;
namespace json = boost::json;

const fs::path data_dir = fs::path(SWITCHBOARD_SOURCE_DIR) / "examples" / "scheduling" / "data";

// A calendar file in a fresh temporary directory, removed at the end.
struct calendar_file {
  fs::path dir;
  std::shared_ptr<sb::scheduling::calendar> cal;
  std::shared_ptr<sb::agents::tool_registry> tools;

  calendar_file() {
    std::string pattern = (fs::temp_directory_path() / "sb-sample-bench-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    dir = pattern;
    cal = sb::scheduling::calendar::open_file(dir / "calendar.db", sb::scheduling::load_household(data_dir));
    tools = sb::scheduling::make_calendar_tool_registry(cal, {.confirm_changes = false, .booking_hold = {}});
  }
  ~calendar_file() { fs::remove_all(dir); }
};

// Calls `name` once, synchronously.
sb::agents::tool_result call(boost::asio::io_context& io, sb::agents::tool& t, const json::value& arguments) {
  sb::agents::tool_context context{spdlog::default_logger(), {}, {}, "bench"};
  sb::agents::tool_result out;
  boost::asio::co_spawn(io, t.call(context, arguments), [&](std::exception_ptr e, sb::agents::tool_result r) {
    if (e) std::rethrow_exception(e);
    out = std::move(r);
  });
  io.restart();
  io.run();
  return out;
}

void BM_SnapshotDirect(benchmark::State& state) {
  calendar_file f;
  for (auto _ : state) benchmark::DoNotOptimize(f.cal->snapshot());
}
BENCHMARK(BM_SnapshotDirect)->Unit(benchmark::kMicrosecond);

void BM_HouseholdThroughTool(benchmark::State& state) {
  calendar_file f;
  boost::asio::io_context io;
  auto& tool = f.tools->at(sb::scheduling::household_tool);
  const json::value arguments = json::parse(R"({"calendars": true})");
  for (auto _ : state) {
    const auto read = call(io, tool, arguments);
    benchmark::DoNotOptimize(sb::scheduling::household_from_json(read.value(), "bench"));
  }
}
BENCHMARK(BM_HouseholdThroughTool)->Unit(benchmark::kMicrosecond);

void BM_BookAndCancel(benchmark::State& state) {
  calendar_file f;
  boost::asio::io_context io;
  auto& book = f.tools->at(sb::scheduling::book_tool);
  auto& cancel = f.tools->at(sb::scheduling::cancel_tool);
  const json::value booking = json::parse(
      R"({"title": "Bench", "start": "2026-03-12T20:00", "end": "2026-03-12T21:00", "participants": ["Ana"],
          "resources": [], "moved_from": null})");
  const json::value cancelling =
      json::parse(R"({"title": "Bench", "start": "2026-03-12T20:00", "end": "2026-03-12T21:00"})");
  for (auto _ : state) {
    const auto booked = call(io, book, booking);
    if (!booked.ok() || booked.value().at("action") != "booked") {
      state.SkipWithError("not booked");
      break;
    }
    if (!call(io, cancel, cancelling).ok()) {
      state.SkipWithError("not cancelled");
      break;
    }
  }
}
BENCHMARK(BM_BookAndCancel)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

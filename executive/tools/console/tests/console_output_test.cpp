// What the console prints: figures with their units, tables, the summary of a run, and the view that redraws
// itself in place on a terminal and only appends elsewhere.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "human_units.hpp"
#include "live_view.hpp"
#include "rate_table.hpp"
#include "run_summary.hpp"

namespace daqx::console {
namespace {

std::string contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  return text;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("figures carry their units: bytes in decimal SI, rates per second, a missing figure as a dash", "[console]") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(21e6) == "21.0 MB");
  CHECK(format_bytes(6.461e9) == "6.46 GB");
  CHECK(format_bytes(999.9e9) == "1.00 TB");
  CHECK(format_bandwidth(1.689e9) == "1.69 GB/s");
  CHECK(format_bandwidth(std::nullopt) == "-");
  CHECK(format_rate(25255.4, "events") == "25255 events/s");
  CHECK(format_rate(2.5, "round trips") == "2.5 round trips/s");
  CHECK(format_rate(std::nullopt, "events") == "-");
  CHECK(format_count(96280, "events") == "96280 events");
  CHECK(elapsed_of(12.04, 20) == "12.0 / 20 s");
  CHECK(elapsed_of(3.0, 0) == "3.0 s");
}

TEST_CASE("a plain table has one self-contained line per unit and per kind, aligned, with no heading", "[console]") {
  UnitRates bu0{"http://a", "evb/bu/0", "evb/bu", "Enabled", "", "events", true, 1000.0, 4e6, 5000, 2e7};
  UnitRates bu1{"http://b", "evb/bu/1", "evb/bu", "Failed", "lost its RU", "events", true, {}, {}, 10, 4e4};
  const std::vector<std::string> lines = unit_table({bu0, bu1}, Layout::plain, "heading", "3.0 / 20 s  ");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rfind("3.0 / 20 s  evb/bu/0", 0) == 0);
  CHECK(lines[0].find("1000 events/s") != std::string::npos);
  CHECK(lines[0].find("4.00 MB/s") != std::string::npos);
  CHECK(lines[1].find("FAILED: lost its RU") != std::string::npos);
  CHECK(lines[2].find("evb/bu (2)") != std::string::npos);
  CHECK(lines[2].find("total of 1/2") != std::string::npos);  // the sum covers only the unit with a rate
  CHECK(lines[0].find("Enabled") == lines[1].find("Failed"));  // columns line up

  const std::vector<std::string> terminal = unit_table({bu0, bu1}, Layout::terminal, "run 7  3.0 / 20 s", "");
  CHECK(terminal[0] == "run 7  3.0 / 20 s");
  CHECK(terminal[1].rfind("UNIT", 0) == 0);
}

TEST_CASE("above kFoldAbove units a table shows the totals per kind first, then only the units that need attention, "
          "and one line that counts the rest", "[console]") {
  std::vector<UnitRates> units;
  for (std::size_t i = 0; i < kFoldAbove + 8; ++i)
    units.push_back(UnitRates{"http://c" + std::to_string(i), "evb/bu/" + std::to_string(i), "evb/bu", "Enabled", "",
                              "events", true, 10.0, 1e6, 50, 5e6});
  units[3].state = "Failed";
  units[3].reason = "lost its RU";
  units[7].state = "unreachable";
  units[7].reason = "Connection refused";
  units[7].items_per_second.reset();
  units[7].bytes_per_second.reset();
  const std::vector<std::string> lines = unit_table(units, Layout::plain, "heading", "1.0 s  ");
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  INFO(text);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].find("evb/bu (40)") != std::string::npos);  // the totals first
  CHECK(lines[0].find("total of 39/40") != std::string::npos);
  CHECK(lines[1].find("evb/bu/3") != std::string::npos);
  CHECK(lines[1].find("FAILED: lost its RU") != std::string::npos);
  CHECK(lines[2].find("evb/bu/7") != std::string::npos);
  CHECK(lines[2].find("Connection refused") != std::string::npos);
  CHECK(lines[3] == "1.0 s  38 units Enabled, not listed (tables of up to 32 units list every one)");

  units.resize(kFoldAbove);  // small enough: every unit listed, then the kind
  CHECK(unit_table(units, Layout::plain, "heading", "").size() == kFoldAbove + 1);
}

TEST_CASE("a folded partition table lists the contexts that need attention with their units: not answering, a "
          "connection down or starved, failed allocations", "[console]") {
  std::vector<ContextSample> contexts;
  std::vector<UnitRates> units;
  for (std::size_t i = 0; i < 40; ++i) {
    ContextSample context;
    context.url = "http://c" + std::to_string(i);
    context.answered = true;
    context.connections_up = context.connections_total = 2;
    contexts.push_back(context);
    units.push_back(UnitRates{context.url, "evb/ru/" + std::to_string(i), "evb/ru", "Enabled", "", "fragments", true,
                              100.0, 1e6, 500, 5e6});
  }
  contexts[5].connections_up = 1;
  contexts[9].connections_starved = 1;
  contexts[12].pools.push_back(PoolUse{"evb/ru/12/pool", 10, 100, 3});
  contexts[20].answered = false;
  contexts[20].error = "Connection refused";
  units[20].state = "unreachable";
  const std::vector<std::string> lines = partition_table(contexts, units, Layout::terminal, "heading", "");
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  INFO(text);
  REQUIRE(lines.size() == 2 + 1 + 4 * 2 + 1);  // heading, columns, the kind, 4 contexts with a unit each, the rest
  CHECK(lines[2].rfind("evb/ru (40)", 0) == 0);
  CHECK(text.find("http://c5  answering  connections 1/2 up") != std::string::npos);
  CHECK(text.find("http://c9  answering  connections 2/2 up  1 connections starved") != std::string::npos);
  CHECK(text.find("(3 failed allocations)") != std::string::npos);
  CHECK(text.find("http://c20  unreachable: Connection refused") != std::string::npos);
  CHECK(text.find("http://c1  ") == std::string::npos);  // fine: folded
  CHECK(lines.back() == "36 contexts answering with every connection up, and 36 units Enabled, not listed (tables of up "
                        "to 32 units list every one)");
}

TEST_CASE("in place on a terminal a view moves back over what it drew, appended it never does", "[console]") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  {
    LiveView view(file, LiveView::Mode::in_place);
    view.show({"one", "two"});
    view.show({"three", "four", "five"});
    view.erase();
    view.show({"six"});
  }
  const std::string drawn = contents(file);
  std::fclose(file);
  CHECK(drawn.rfind("one\ntwo\n", 0) == 0);  // the first show moves nowhere
  CHECK(count_of(drawn, "\x1b[2A\r\x1b[J") == 1);  // back over two lines
  CHECK(count_of(drawn, "\x1b[3A\r\x1b[J") == 1);  // erase: back over three
  CHECK(drawn.substr(drawn.size() - 4) == "six\n");  // drawn after the erase without moving again

  std::FILE* plain = std::tmpfile();
  REQUIRE(plain != nullptr);
  LiveView appended(plain, LiveView::Mode::append);
  appended.show({"one"});
  appended.erase();
  appended.show({"two"});
  CHECK(contents(plain) == "one\ntwo\n");
  std::fclose(plain);
  std::FILE* not_a_terminal = std::tmpfile();
  CHECK(LiveView::mode_for(not_a_terminal) == LiveView::Mode::append);
  std::fclose(not_a_terminal);
}

TEST_CASE("a run's summary has amounts, averages over the enabled time, losses and errors, and no settings",
          "[console]") {
  UnitTotals evm{"http://e", "evb/evm/0", "evb/evm", "Configured", {"events_completed", "events", ""},
                 {{"events_completed", 2000}, {"events_lost", 12}, {"bu_drops", 1}, {"requests", 50}}};
  UnitTotals bu0{"http://a", "evb/bu/0", "evb/bu", "Configured", {"events_built", "events", "bytes_built"},
                 {{"events_built", 1000}, {"bytes_built", 4e9}, {"events_corrupt", 0}}};
  UnitTotals bu1{"http://b", "evb/bu/1", "evb/bu", "Configured", {"events_built", "events", "bytes_built"},
                 {{"events_built", 988}, {"bytes_built", 3.95e9}, {"events_corrupt", 2}}};
  ContextSample transport;
  transport.url = "http://a";
  transport.answered = true;
  transport.transport_counters = {{"tcp send_errors", 0}, {"tcp reconnects", 1}, {"tcp bytes_sent", 5e9}};
  const std::vector<std::string> lines = run_summary({evm, bu0, bu1}, {transport}, 2.0, 7);
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  INFO(text);
  CHECK(lines[0].rfind("run 7: 2.0 s enabled", 0) == 0);
  CHECK(text.find("2000 events  ") != std::string::npos);
  CHECK(text.find("1000 events/s") != std::string::npos);            // 2000 over 2 s
  CHECK(text.find("events_lost 12, bu_drops 1") == std::string::npos);  // sorted by name:
  CHECK(text.find("bu_drops 1, events_lost 12") != std::string::npos);
  CHECK(text.find("evb/bu (2)  1988 events     7.95 GB") != std::string::npos);
  CHECK(text.find("3.98 GB/s") != std::string::npos);  // the BUs' 7.95 GB over 2 s
  CHECK(text.find("events_corrupt 2") != std::string::npos);
  CHECK(text.find("requests") == std::string::npos);  // neither an amount, a loss nor an error
  CHECK(text.find("http://a: tcp reconnects 1") != std::string::npos);
  CHECK(is_loss_counter("events_incomplete"));
  CHECK(is_error_counter("malformed_frames"));
  CHECK_FALSE(is_error_counter("events_built"));
}

TEST_CASE("a run's summary gives each publisher's streams a line, apart from the run's losses", "[console]") {
  UnitTotals bu{"http://a", "evb/bu/0", "evb/bu", "Configured", {"events_built", "events", ""},
                {{"events_built", 1000}, {"stream_records_sent", 1010}, {"stream_events_dropped", 990},
                 {"stream_subscribers_lost", 1}, {"stream_subscriptions_refused", 0}}};
  UnitTotals quiet{"http://b", "evb/bu/1", "evb/bu", "Configured", {"events_built", "events", ""},
                   {{"events_built", 1000}, {"stream_records_sent", 0}}};
  ContextSample context;
  context.url = "http://a";
  context.answered = true;
  const std::vector<std::string> lines = run_summary({bu, quiet}, {context}, 2.0, 7);
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  INFO(text);
  CHECK(text.find("streams (per publisher; docs/monitoring.md):\n  evb/bu/0: 1010 records sent, 990 events dropped by "
                  "subscribers' policies, 1 subscribers lost, 0 subscriptions refused\n") != std::string::npos);
  CHECK(text.find("evb/bu/1:") == std::string::npos);  // it published nothing
  CHECK(text.find("stream_events_dropped") == std::string::npos);  // not among the run's losses
  CHECK_FALSE(is_loss_counter("stream_subscribers_lost"));
  CHECK(is_loss_counter("stream_events_withheld"));  // neither streamed nor output: lost to the run
}

TEST_CASE("a run's summary names the units of each context the run lost, and why, after the table", "[console]") {
  UnitTotals bu0{"http://a", "evb/bu/0", "evb/bu", "Enabled", {"events_built", "events", ""}, {{"events_built", 10}}};
  UnitTotals bu1{"http://b", "evb/bu/1", "evb/bu", "lost", {"events_built", "events", ""}, {{"events_built", 7}}};
  ContextSample answered;
  answered.url = "http://a";
  answered.answered = true;
  ContextSample lost;
  lost.url = "http://b";
  lost.down_state = kLostState;
  lost.error = "died (killed by signal 9 (Killed))";
  ContextSample unreachable;  // not lost: the launcher has not given up on it
  unreachable.url = "http://c";
  const std::vector<std::string> lines = run_summary({bu0, bu1}, {answered, lost, unreachable}, 2.0, 7);
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  INFO(text);
  CHECK(lines.back() == "lost: evb/bu/1 (context http://b, died (killed by signal 9 (Killed)))");
  CHECK(text.find("lost: ") == text.rfind("lost: "));  // that one only
  CHECK(text.find("evb/bu/1    7 events") != std::string::npos);  // its counts up to its death are in the table
}

TEST_CASE("the counters file lists every counter of every unit, zeros included, one per line", "[console]") {
  ContextSample context;
  context.url = "http://a";
  context.answered = true;
  UnitSample bu;
  bu.name = "evb/bu/0";
  bu.counters = {{"events_built", 1234567890123}, {"events_corrupt", 0}, {"registration_seconds", 0.25}};
  context.units.push_back(bu);
  context.transport_counters = {{"tcp bytes_sent", 42}};
  ContextSample silent;
  silent.url = "http://b";
  silent.error = "Connection refused";
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/console_test_counters.txt";
  REQUIRE(write_counters(path, {context, silent}, 7));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  CHECK(text.str().find("evb/bu/0 events_built 1234567890123\n") != std::string::npos);
  CHECK(text.str().find("evb/bu/0 events_corrupt 0\n") != std::string::npos);
  CHECK(text.str().find("evb/bu/0 registration_seconds 0.25\n") != std::string::npos);
  CHECK(text.str().find("# http://b did not answer: Connection refused") != std::string::npos);
  CHECK(text.str().find("http://a tcp bytes_sent 42\n") != std::string::npos);
  CHECK_FALSE(write_counters("/nonexistent-dir/counters.txt", {context}, 7));
}

}  // namespace daqx::console

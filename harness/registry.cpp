#include "registry.h"

#include "chain_harness.h"
#include "gate_harness.h"
#include "sink_harness.h"
#include "topk_harness.h"
#include "routing_harness.h"

namespace hy4::harness {

const std::vector<std::string>& harnessed_ops() {
  static const std::vector<std::string> ops = {"gate", "sink", "topk", "routing"};
  return ops;
}

namespace {
// The file's CPU scheduling seed for the length of one replay (save_failed_case wrote it).
struct ScheduleSeedOfFile {
  uint64_t saved = hy4::rt::schedule_seed();
  explicit ScheduleSeedOfFile(const CaseFile& f) {
    if (f.ints.count("sched_seed")) hy4::rt::set_schedule_seed(static_cast<uint64_t>(f.ints.at("sched_seed")));
  }
  ~ScheduleSeedOfFile() { hy4::rt::set_schedule_seed(saved); }
};
}  // namespace

Verdict replay_case(const CaseFile& f, hy4::rt::Stream s, bool graph) {
  const ScheduleSeedOfFile schedule(f);
  if (f.op == "chain") return replay_chain_file(f, s);  // always a captured graph
  if (f.op == "gate") {
    const GateCase c = gate_from_file(f);
    if (!graph) return check_gate(c, run_gate_eager(c, s));
    std::vector<GateCase> as_run;
    const auto outs = run_gate_replays(c, {c}, {c.shape.T}, s, &as_run);
    return check_gate(as_run.at(0), outs.at(0));
  }
  if (f.op == "sink") {
    const SinkCase c = sink_from_file(f);
    if (!graph) return check_sink(c, run_sink_eager(c, s));
    std::vector<SinkCase> as_run;
    const auto outs = run_sink_replays(c, {c}, s, &as_run);
    return check_sink(as_run.at(0), outs.at(0));
  }
  if (f.op == "topk") {
    const TopkCase c = topk_from_file(f);
    if (!graph) return check_topk(c, run_topk_eager(c, s));
    std::vector<TopkCase> as_run;
    const auto outs = run_topk_replays(c, {c}, {c.real_rows()}, s, &as_run);
    return check_topk(as_run.at(0), outs.at(0));
  }
  if (f.op == "routing") {
    const RoutingCase c = routing_from_file(f);
    if (!graph) return check_routing(c, run_routing_eager(c, s));
    std::vector<RoutingCase> as_run;
    const auto outs = run_routing_replays(c, {c}, s, &as_run);
    return check_routing(as_run.at(0), outs.at(0));
  }
  throw CaseFileError("no harness for op '" + f.op + "'");
}

CaseFile expand_case(const CaseFile& f) {
  CaseFile out;
  if (f.op == "gate") out = gate_to_file(gate_from_file(f));
  else if (f.op == "sink") out = sink_to_file(sink_from_file(f));
  else if (f.op == "topk") out = topk_to_file(topk_from_file(f));
  else if (f.op == "routing") out = routing_to_file(routing_from_file(f));
  else if (f.op == "chain") return f;  // a chain file is its seed
  else throw CaseFileError("case file holds unknown op '" + f.op + "'");
  for (const auto& [k, v] : f.text) out.text[k] = v;
  for (const char* k : {"sched_seed", "cpu_warp"})  // save_failed_case's replay settings
    if (f.ints.count(k)) out.ints[k] = f.ints.at(k);
  return out;
}

}  // namespace hy4::harness

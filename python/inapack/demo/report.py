"""Compares the training runs of make train-demo and plots them: the exact local all-reduce beside
the switch runs (clean, with loss+dup+reorder, with a preempting job). Prints a summary and exits 1
if any check fails:

- every switch step's sum was exactly the fixed-point rule and within its stated error bound, on
  every rank, and all ranks of a run end with bitwise identical parameters;
- the switch runs are bitwise identical to each other (loss, duplication, reordering and
  preemption changed nothing; a shorter run must equal the start of the longest one);
- each switch run's final test accuracy equals the local run's at the same step within one test
  example, and one switch run trains as long as the local run;
- the faults and the preemption really happened (retransmissions; evictions of the job's slots).
"""

import argparse
import glob
import json
import os
import re
import sys


def load_run(spec):
    """NAME=DIR[,LOG]: the ranks' JSON files in DIR, ina-demo's output in LOG."""
    name, _, rest = spec.partition("=")
    d, _, log = rest.partition(",")
    ranks = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(d, "rank*.json")))]
    jobs = {}
    if log and os.path.exists(log):
        for line in open(log):
            if line.startswith("demo-job: "):
                kv = dict(re.findall(r"(\w+)=(\S+)", line))
                jobs[int(kv["job"])] = kv
            elif line.startswith("demo-summary: "):
                jobs["summary"] = dict(re.findall(r"(\w+)=(\S+)", line))
    return name, ranks, jobs


def check(local, runs, faults_run, preempt_run):
    problems = []
    n_test = local["n_test"]
    at_step = {c["step"]: c for c in local["curve"]}
    longest = max((r for r in runs if r[1]), key=lambda r: r[1][0]["steps"], default=None)
    for name, ranks, jobs in runs:
        if not ranks:
            problems.append("%s: no results" % name)
            continue
        r0 = ranks[0]
        if len(ranks) != r0["world_size"]:
            problems.append("%s: %d of %d ranks wrote results" % (name, len(ranks), r0["world_size"]))
        for r in ranks:
            if r["status"] != "ok" or r["exact_steps"] != r["steps"] or r["bound_violations"]:
                problems.append("%s rank %d: %d/%d steps equal to the fixed-point rule, %d values beyond the bound"
                                % (name, r["rank"], r["exact_steps"], r["steps"], r["bound_violations"]))
            if r["params_sha256"] != r0["params_sha256"]:
                problems.append("%s: rank %d's parameters differ from rank 0's" % (name, r["rank"]))
        # Bitwise the same training as the longest switch run, as far as both went (a shorter run
        # is a prefix: every evaluation point, parameters' hash included, identical).
        ref_name, ref = longest[0], longest[1][0]["curve"]
        if r0["curve"] != ref[:len(r0["curve"])]:
            problems.append("%s: not bitwise identical to %s" % (name, ref_name))
        last = r0["curve"][-1]
        if last["step"] not in at_step:
            problems.append("%s: the local run has no evaluation at step %d" % (name, last["step"]))
        elif abs(last["test_acc"] - at_step[last["step"]]["test_acc"]) * n_test > 1 + 1e-9:
            problems.append("%s: accuracy %.4f vs local %.4f at step %d: more than one test example apart"
                            % (name, last["test_acc"], at_step[last["step"]]["test_acc"], last["step"]))
        if name == faults_run and sum(r["stats"]["Resent"] for r in ranks) == 0:
            problems.append("%s: no retransmission: the faults did not happen" % name)
        if name == preempt_run and int(jobs.get(r0["job"], {}).get("switch_evicted", 0)) == 0:
            problems.append("%s: the training job lost no slot to the higher-priority job" % name)
    if longest is not None and longest[1][0]["steps"] != local["steps"]:
        problems.append("no switch run trained as long as the local run (%d steps)" % local["steps"])
    return problems


def plot(local, runs, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = [("-", "s"), ("--", "^"), (":", "D"), ("-.", "v")]
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8))
    steps = [c["step"] for c in local["curve"]]
    ax[0].plot(steps, [c["train_loss"] for c in local["curve"]], color="black", lw=4, alpha=0.35,
               label="local exact all-reduce (acc %.4f)" % local["final_test_acc"])
    ax[1].plot(steps, [c["test_acc"] for c in local["curve"]], color="black", lw=4, alpha=0.35, label="local exact")
    for i, (name, ranks, jobs) in enumerate(runs):
        if not ranks:
            continue
        c = ranks[0]["curve"]
        ls, mk = styles[i % len(styles)]
        # Markers on alternate points per run, so coinciding curves stay distinguishable.
        kw = dict(ls=ls, marker=mk, markevery=(i, len(runs) + 1), ms=6, lw=1.5, fillstyle="none")
        s = [p["step"] for p in c]
        ax[0].plot(s, [p["train_loss"] for p in c], label="%s (acc %.4f)" % (name, ranks[0]["final_test_acc"]), **kw)
        ax[1].plot(s, [p["test_acc"] for p in c], label=name, **kw)
        ax[2].plot(s, [max(abs(p["train_loss"] - q["train_loss"]), 1e-12) for p, q in zip(c, local["curve"])],
                   label=name, **kw)
    ax[0].set(title="training loss", xlabel="step", ylabel="mean cross-entropy", yscale="log")
    ax[1].set(title="test accuracy", xlabel="step", ylim=(0.85, 1.0))
    ax[2].set(title="|loss(switch) - loss(local)|  (1e-12: equal)", xlabel="step", yscale="log")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle("INAPack train-demo: MLP on digits, %d workers, %d steps; switch runs coincide with each other "
                 "and track the exact local all-reduce" % (local["world_size"], local["steps"]), fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description="compare and plot make train-demo's runs")
    ap.add_argument("--local", required=True, help="the local run's JSON")
    ap.add_argument("--run", action="append", default=[], help="NAME=DIR[,LOG] of a switch run (repeatable)")
    ap.add_argument("--faults", help="the run with loss+dup+reorder (must show retransmissions)")
    ap.add_argument("--preempt", help="the run with a preempting job (the training job must lose slots)")
    ap.add_argument("--png", required=True)
    a = ap.parse_args(argv)
    local = json.load(open(a.local))
    runs = [load_run(s) for s in a.run]
    problems = check(local, runs, a.faults, a.preempt)
    plot(local, runs, a.png)
    p = lambda *x: print("train-demo:", *x)  # noqa: E731
    p("MLP 64-64-10 (%d parameters) on digits, %d test examples, %d workers, %d epochs = %d steps, seed %d, "
      "fixed-point buckets of %d values" % (local["params"], local["n_test"], local["world_size"], local["epochs"],
                                            local["steps"], local["seed"], local["scale_bucket"]))
    p("%-8s %-7s %-6s %-9s %-10s %-12s %-11s %-9s %-11s %-7s %-8s %s" % (
        "run", "switch", "steps", "test_acc", "train_loss", "acc-local", "exact_steps", "bound_ok", "err/bound",
        "resent", "evicted", "allreduce_ms"))
    p("%-8s %-7s %-6d %-9.4f %-10.5f %-12s %-11s %-9s %-11s %-7s %-8s %s" % (
        "local", "-", local["steps"], local["final_test_acc"], local["final_train_loss"], "-", "-", "-", "-", "-", "-",
        "-"))
    for name, ranks, jobs in runs:
        if not ranks:
            continue
        r0 = ranks[0]
        ev = jobs.get(r0["job"], {}).get("switch_evicted", "?")
        same = {c["step"]: c for c in local["curve"]}.get(r0["steps"], {"test_acc": float("nan")})
        p("%-8s %-7s %-6d %-9.4f %-10.5f %-+12.4f %-11s %-9s %-11.3g %-7d %-8s %.2f" % (
            name, jobs.get("summary", {}).get("switch", "?"), r0["steps"], r0["final_test_acc"], r0["final_train_loss"],
            r0["final_test_acc"] - same["test_acc"], "%d/%d" % (min(r["exact_steps"] for r in ranks), r0["steps"]),
            "yes" if not any(r["bound_violations"] for r in ranks) else "NO",
            max(r["max_err_over_bound"] for r in ranks), sum(r["stats"]["Resent"] for r in ranks), ev,
            1e3 * r0["allreduce_s"] / max(r0["steps"], 1)))
    p("plot:", a.png)
    if problems:
        p("FAIL: " + "; ".join(problems))
        return 1
    p("OK: switch accuracy = local accuracy within one test example at every run's end; the switch runs are "
      "bitwise identical with faults and preemption")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The training demo's logic on an in-process PS (make train-demo runs it through a switch): every
step's sum is the fixed-point rule exactly, all ranks end bitwise identical, and the accuracy
matches the exact local all-reduce."""

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="SKIP: scikit-learn not installed (the demo's data set; scripts/pyenv.sh)")

from inapack.demo import train  # noqa: E402


def test_switch_ranks_agree_with_local(ranks, tmp_path):
    args = ["--epochs", "3", "--world-size", "2"]
    local = train.train(train.parser().parse_args(["--mode", "local", "--out", str(tmp_path / "l.json")] + args))
    res = ranks(2, lambda w: train.train(
        train.parser().parse_args(["--mode", "switch", "--out", str(tmp_path / "s")] + args), w))
    assert [r["status"] for r in res] == ["ok", "ok"]
    assert res[0]["exact_steps"] == res[0]["steps"] == local["steps"] > 0
    assert res[0]["params_sha256"] == res[1]["params_sha256"]
    assert res[0]["max_err_over_bound"] <= 1
    assert abs(res[0]["final_test_acc"] - local["final_test_acc"]) <= 1 / local["n_test"]
    np.testing.assert_allclose([c["train_loss"] for c in res[0]["curve"]],
                               [c["train_loss"] for c in local["curve"]], rtol=1e-4)

"""Building and loading the operators: cached by source hash, a clear fallback when they cannot be built."""

from __future__ import annotations

import shutil
import warnings

import pytest
import torch

from motionkit.kernels import build, loader


def test_status_has_the_documented_keys():
    st = loader.status()
    assert set(st) == {"cpu", "cuda", "error"}
    assert st["cpu"] is True


def test_build_is_cached_by_source_hash(tmp_path, monkeypatch):
    lib = build.build_library("cpu")
    assert lib.is_file() and build.source_hash("cpu") in lib.name
    assert build.build_library("cpu") == lib  # a second call finds the cached library
    copy = tmp_path / "csrc"
    shutil.copytree(build.CSRC, copy)
    monkeypatch.setattr(build, "CSRC", copy)
    assert build.source_hash("cpu") == lib.stem.split("_")[-1]
    (copy / "mk_math.h").write_text((copy / "mk_math.h").read_text() + "\n// changed\n")
    assert build.source_hash("cpu") != lib.stem.split("_")[-1]  # any source change builds afresh
    assert build.source_hash("cuda") != build.source_hash("cpu")


def test_a_failed_build_falls_back_to_torch_and_says_why_once(monkeypatch):
    from motionkit.body.fitting import use_fused_kernels

    def broken(kind, verbose=False):
        raise RuntimeError(f"Error building extension 'x'\nops.cpp:1: error: no compiler for {kind}")

    monkeypatch.setattr(loader, "build_library", broken)
    monkeypatch.setattr(loader, "_state", {"cpu": None, "cuda": None, "error": None})
    with pytest.warns(UserWarning, match="torch path"):
        st = loader.ensure_loaded(cuda=False)
    assert st == {"cpu": False, "cuda": False, "error": st["error"]}
    assert "no compiler for cpu" in st["error"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: no second warning
        loader.ensure_loaded(cuda=False)
        assert use_fused_kernels("auto", torch.device("cpu")) is False
    with pytest.raises(RuntimeError, match="kernels='fused' requested but cpu operators unavailable"):
        use_fused_kernels("fused", torch.device("cpu"))


def test_missing_sources_are_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "CSRC", tmp_path / "nowhere")
    with pytest.raises(RuntimeError, match="sources are not in"):
        build.build_library("cpu")

"""mxmod's XLA settings (mxmod/xla_options.py): CPU convolutions off YNNPACK, the
FAST_COMPILE preset."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mxmod import xla_options
from mxmod.program_tiers import program_jit


def conv_grad(w, x):
    def loss(w):
        y = jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return jnp.sum(jax.nn.relu(y) ** 2)

    return jax.grad(loss)(w)


ARGS = (
    jnp.asarray(np.random.RandomState(0).randn(3, 3, 32, 32).astype(np.float32) * 0.1),
    jnp.asarray(np.random.RandomState(1).randn(4, 16, 16, 32).astype(np.float32)),
)


def ynn_convolutions(compiled) -> int:
    """Convolutions XLA placed in YNNPACK fusions (a fusion names its root operation)."""
    lines = compiled.as_text().splitlines()
    return sum("__ynn_fusion" in line and "conv_general_dilated" in line for line in lines)


@pytest.fixture
def fresh_options(monkeypatch):
    xla_options.reset()
    yield
    xla_options.reset()


def test_this_xla_takes_the_cpu_options(fresh_options):
    assert xla_options.compiler_options() == xla_options.CPU_OPTIONS


def test_xla_alone_puts_these_convolutions_on_ynnpack():
    # the premise: without the options this program's convolutions go to YNNPACK
    assert ynn_convolutions(jax.jit(conv_grad).lower(*ARGS).compile()) > 0


def test_mxmod_programs_keep_convolutions_on_eigen():
    assert ynn_convolutions(xla_options.jit(conv_grad).lower(*ARGS).compile()) == 0
    # a Module program (program_jit), at both tiers' builds
    program = program_jit(conv_grad)
    assert ynn_convolutions(program.lower(*ARGS).compile()) == 0
    quick = program.lower(*ARGS).compile({"xla_backend_optimization_level": 0})
    assert ynn_convolutions(quick) == 0


def mlp_grad(w1, w2, x):
    def loss(ws):
        h = jax.nn.relu(x @ ws[0].T)
        return jnp.sum((h @ ws[1].T) ** 2)

    return jax.grad(loss)((w1, w2))


def test_programs_without_convolutions_compile_as_xla_alone_would():
    args = (jnp.ones((512, 784)), jnp.ones((10, 512)), jnp.ones((128, 784)))
    ours = xla_options.jit(mlp_grad).lower(*args).compile().as_text()
    theirs = jax.jit(mlp_grad).lower(*args).compile().as_text()
    assert "__ynn_fusion" in theirs  # the premise: XLA gives these products to YNNPACK
    assert ours == theirs


def test_same_numbers_as_xla_defaults():
    ours = xla_options.jit(conv_grad)(*ARGS)
    theirs = jax.jit(conv_grad)(*ARGS)
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=1e-4)


def test_an_option_or_value_this_xla_lacks_is_left_out(fresh_options, monkeypatch):
    wanted = dict(xla_options.CPU_OPTIONS)
    unknown = {
        "xla_cpu_no_such_option": True,
        "xla_cpu_experimental_ynn_fusion_type": "NO_SUCH_FUSION_TYPE",
    }
    monkeypatch.setattr(xla_options, "CPU_OPTIONS", unknown)
    assert xla_options.compiler_options() == {}
    xla_options.reset()
    monkeypatch.setattr(xla_options, "CPU_OPTIONS", {"xla_cpu_no_such_option": True, **wanted})
    assert xla_options.compiler_options() == wanted
    # and programs still compile and run with what is left
    assert np.isfinite(np.asarray(xla_options.jit(conv_grad)(*ARGS))).all()


def test_xla_defaults_on_request(fresh_options, monkeypatch):
    monkeypatch.setenv("MXMOD_XLA_DEFAULTS", "1")
    assert xla_options.compiler_options() == {}
    assert ynn_convolutions(xla_options.jit(conv_grad).lower(*ARGS).compile()) > 0


def test_the_users_xla_flags_win(fresh_options, monkeypatch):
    name = "xla_cpu_experimental_ynn_fusion_type"
    monkeypatch.setenv("XLA_FLAGS", f"--{name}=individual_dot,individual_convolution")
    assert name not in xla_options.compiler_options()


def test_an_mxmod_program_called_inside_another_trace_becomes_part_of_it():
    inner = xla_options.jit(conv_grad)
    outer = jax.jit(lambda w, x: inner(w, x) * 2.0)
    np.testing.assert_allclose(outer(*ARGS), 2.0 * inner(*ARGS), rtol=2e-5, atol=2e-4)
    with pytest.raises(TypeError):  # other errors are the caller's
        inner(ARGS[0])


def test_an_accelerator_job_keeps_xla_defaults(fresh_options, monkeypatch):
    monkeypatch.setattr(xla_options.jax, "default_backend", lambda: "gpu")
    assert xla_options.compiler_options() == {}


def conv_bn_relu_grad(x, w, gamma):
    """What the preset fuses differently: a convolution, a normalisation, ReLU and a
    layout transpose (a ResNet block's pattern), differentiated."""

    def loss(w, gamma):
        y = jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        mean = y.mean((0, 1, 2))
        var = jnp.mean(jnp.square(y - mean), (0, 1, 2))
        z = jax.nn.relu((y - mean) * jax.lax.rsqrt(var + 1e-5) * gamma)
        return jnp.sum(jnp.transpose(z, (0, 3, 1, 2)) ** 2)

    return jax.grad(loss, argnums=(0, 1))(w, gamma)


def test_normalised_convolutions_same_numbers_as_xla_defaults():
    x = jnp.asarray(np.random.RandomState(2).randn(4, 16, 16, 32).astype(np.float32))
    args = (x, ARGS[0], jnp.linspace(0.5, 1.5, 32))
    ours = xla_options.jit(conv_bn_relu_grad)(*args)
    theirs = jax.jit(conv_bn_relu_grad)(*args)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)


def test_a_process_ending_while_the_probe_compiles_lets_it_finish(tmp_path):
    """The probe compiles on a daemon thread; a script failing right after bind() used to
    end inside that compile, and the killed thread aborted the process ('terminate
    called...', exit status 134). The process now lets the probe finish first."""
    import subprocess
    import sys

    marker = tmp_path / "probe_finished"
    script = tmp_path / "early_exit.py"
    script.write_text(
        "import time\n"
        "from mxmod import xla_options\n"
        "def slow_probe(options):\n"
        "    time.sleep(1.0)\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    return options\n"
        "xla_options._accepted_by_xla = slow_probe\n"
        "xla_options.start_probe()\n"
        "raise SystemExit(3)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr[-500:]
    assert marker.exists()

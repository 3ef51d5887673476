"""One C-simulation build (under both header sets) and one RTL build check, side by side in one graph
(tests/union.py), the designs of several suites, each bit for bit with the reference:

    the threshold folds          test_ops_threshold.FOLDS: dense -> threshold with pe/simd, a shared row, n = 15
                                 with a declared type, a map stage of 4 lanes
    the float-scale models       Brevitas-style QONNX imports (test_onnx_float_scales.MODELS) on inputs on their
                                 input quantizer's grid, the reference having matched qonnx on them
    the table activations,       tests/more_graphs.py (fixed point; float32 in csim, to float32's rounding)
      upsamples, erf, gelu, silu
    a U-Net                      conv, maxpool, ConvTranspose (zero insertion, conv), concat (tests/onnx_more_cases)
    eight convs typed by auto:10 unsigned types, more integer bits than bits (RTL; test_onnx_auto.auto_deep_cnn)
    masked softmaxes             causal, padding and scattered masks, 4 and 2 lanes (tests/own_graphs.py), and a
                                 torch-style causal self-attention imported from ONNX (test_onnx_masks); float32
                                 masked softmax is in test_hls_stages_own's build (a float sum's order: 1e-5)
    layer_norm and rms_norm      tests/norm_graphs.py, on rows that stress them (norm_frames): several input, norm
                                 and output types, five stages of 2 to 16 lanes; float32 in csim
    constant products            multiplications by a constant of one value as shifts and adds (test_shift_add),
                                 inputs at both ends of their range in every frame
    a small TFC-W1A1             quant_build.tfc_w1a1 of 64-16-16-16-10 as the solver fits it to a Pynq-Z2, the
                                 reference having matched qonnx on image-like inputs (test_tfc has the full size)
    two torch encoder layers     tests/transformers/: a pre-LN GELU layer (plain softmax) and the TorchScript
                                 export of a post-LN ReLU layer with its causal mask (LayerNorm decomposed), each
                                 as the ONNX import types it and folded as the solver fits it to a Pynq-Z2

The RTL run is also the timing model's cycle for cycle (rtl_design.simulate) and lint clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tiers import need

need("onnx")
need("qonnx")

from more_graphs import fixed_more, fixed_tf, float_more, float_tf  # noqa: E402
from norm_graphs import NORM_FOLD, fixed_norms, float_norms, norm_frames  # noqa: E402
from onnx_more_cases import unet  # noqa: E402
from own_graphs import MASKED_LANES, masked_softmaxes  # noqa: E402
from test_onnx_auto import auto_deep_cnn  # noqa: E402
from test_onnx_float_scales import MODELS, assert_matches, imported  # noqa: E402
from test_onnx_masks import add_mask, causal  # noqa: E402
from test_ops_threshold import FOLDS  # noqa: E402
from test_shift_add import constant_product_frames, constant_products  # noqa: E402
from test_tfc import small_tfc  # noqa: E402
from union import union, union_fold  # noqa: E402

from hlsfuse import fuse, reference  # noqa: E402
from hlsfuse.boards import target_of  # noqa: E402
from hlsfuse.compile import CompileOptions, solver_space  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx, to_graph_layout  # noqa: E402
from hlsfuse.lower import Folding, LowerOptions, lower  # noqa: E402
from hlsfuse.lower.fold import solve  # noqa: E402

ENCODER_LAYERS = ("tel_gelu_pre", "tel_legacy_relu_post")
MODELS_DIR = Path(__file__).parent / "transformers"
FLOAT_SCALE_MODELS = ("mlp-w1a1-bipolar", "mlp-w2a2", "mlp-w4a4", "mlp-w8a8", "mlp-w5a4-per-channel-acts", "cnn-w4a4")
FRAMES = 3


def parts(with_floats: bool):
    """(graph, folding, frames as the graph's inputs) of each design."""
    from quant_build import grid_frames

    found = [(FOLDS[case][0](), FOLDS[case][1], None) for case in sorted(FOLDS)]
    for name in FLOAT_SCALE_MODELS:
        proto = MODELS[name](0)
        graph, ties = imported(proto)
        inputs = grid_frames(proto, FRAMES, 9)
        assert_matches(proto, graph, inputs, ties)
        found.append((graph, Folding(), [to_graph_layout(graph, f) for f in inputs]))
    products = constant_products()
    found.append((products, Folding(), constant_product_frames(products, FRAMES)))
    tfc, tfc_frames = small_tfc(FRAMES)
    options = CompileOptions(device=target_of("pynq-z2"))
    found.append((tfc, solve(solver_space(tfc, options), options.budget), tfc_frames))
    found += [(fixed_more(), Folding(), None), (fixed_tf(), Folding(), None)]
    found.append((from_onnx(unet("ConvTranspose"), precision="auto:16"), Folding(), None))
    found.append((masked_softmaxes(), Folding(lanes=tuple(MASKED_LANES.items())), None))
    found.append((from_onnx(add_mask(causal()), precision="fixed<16,6,RND,SAT>"), Folding(), None))
    norms = fixed_norms()
    found.append((norms, NORM_FOLD, [norm_frames(norms, seed) for seed in range(FRAMES)]))
    for name in ENCODER_LAYERS:
        graph = from_onnx(MODELS_DIR / f"{name}.onnx", input_ranges={"x": (-3.0, 3.0)})
        options = CompileOptions(device=target_of("pynq-z2"))
        found.append((graph, solve(solver_space(graph, options), options.budget), None))
    if with_floats:
        found += [(float_more(), Folding(), None), (float_tf(), Folding(), None), (float_norms(), Folding(), None)]
    else:
        found.append((auto_deep_cnn(), Folding(), None))
    return found


def shared(with_floats: bool):
    """The union of ``parts``, its folding and FRAMES frames of its inputs."""
    found = parts(with_floats)
    graphs = [graph for graph, _, _ in found]
    frames = []
    for seed in range(FRAMES):
        frame = {}
        for k, (graph, _, given) in enumerate(found):
            inputs = given[seed] if given is not None else reference.random_inputs(graph, seed)
            frame.update({f"g{k}_{name}": value for name, value in inputs.items()})
        frames.append(frame)
    return union(graphs, "shared"), union_fold(graphs, [fold for _, fold, _ in found]), frames


@pytest.mark.gxx
def test_csim_of_the_shared_design_is_exact_under_both_header_sets(tmp_path):
    from hls_support import csim_both, write_project

    from hlsfuse.backends.hls import HlsOptions

    graph, fold, frames = shared(with_floats=True)
    plan = lower(graph, fuse(graph), LowerOptions(fold=fold))
    out = write_project(graph, tmp_path / graph.name, plan, HlsOptions(float_rtol=1e-7, float_atol=0.0))
    result = csim_both(out, frames, graph=graph)
    assert result.passed, result.report()
    assert result.compared == FRAMES * sum(graph.types[t].size for t in graph.outputs)


@pytest.mark.verilator
def test_rtlsim_of_the_shared_design_is_bit_exact_lint_clean_and_the_model(tmp_path):
    from rtl_design import lint, plan_of, simulate

    graph, fold, frames = shared(with_floats=False)
    plan = plan_of(graph, fold=fold)
    result = simulate(graph, tmp_path, frames=FRAMES, driver="native", plan=plan, inputs=frames)
    assert result.passed, result.report()
    assert result.compared == FRAMES * sum(graph.types[t].size for t in graph.outputs)
    assert lint(tmp_path) == ""

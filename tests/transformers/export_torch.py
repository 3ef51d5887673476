"""Export the transformer models of tests/transformers/ from PyTorch, the way their users export them.

Run with a Python that has torch (not a dependency of hlsfuse; the ONNX files it writes are committed):

    python tests/transformers/export_torch.py tests/transformers

Every model is small (a few thousand to ~100k parameters) and exported with its weights inside the file:

    tel_<act>_<post|pre>[_causal]   nn.TransformerEncoderLayer(d_model 32, 4 heads, feed-forward 64,
                                    batch_first), sequence 8; torch.onnx.export's default (dynamo) exporter,
                                    opset 18: LayerNormalization, Erf-based GELU, packed Q/K/V split by Gather
    tel_legacy_<act>_<post|pre>     tel_<act>_<post|pre>_causal's weights through the TorchScript exporter at
                                    opset 14 (LayerNorm decomposed into ReduceMean/Sub/Pow/Sqrt/Div, the mask
                                    computed by shape arithmetic, Trilu and Where)
    dynamic_sequence                tel_gelu_post exported with a dynamic sequence length (dim 1 of x is
                                    'sequence'): refused as it is, built with --input-shape x=1,8,32
    bert2                           trained briefly (``train``: a synthetic 3-way task) so that it decides with a
                                    trained model's margins, not a random one's near-ties: a 2-layer BERT-style
                                    encoder written like Hugging Face's (separate Q, K, V
                                    projections, scores / sqrt(d) + a constant padding mask, softmax, exact
                                    GELU, post-LN), sequence 32, hidden 64, 4 heads, feed-forward 256, pooler
                                    (class token, dense, tanh) and a 3-way classifier; TorchScript exporter,
                                    opset 13
    vit_cls, vit_mean               ViT-tiny on 3x32x32 images, trained (6000 Adam steps of 64 images, one-cycle
                                    learning rate up to 2e-3) on a synthetic 10-way task it learns: images
                                    U(-1, 1), the class the one of 10 fixed random 3x8x8 filters that responds most
                                    on average over the 16 patches (accuracy about 0.91; its top two logits on such
                                    an image typically about 3 apart, the fixed-point error about 0.01 to 0.03): an
                                    8x8 patch-embedding Conv (16 patches, hidden 64), class token or mean pooling,
                                    position embedding, 2 pre-LN encoder layers (4 heads, feed-forward 128, GELU),
                                    final LayerNorm and a 10-way head; dynamo exporter, opset 21 (cls, GELU as the
                                    Gelu op) and 18 (mean)

Training sums in an order that depends on torch's number of threads: the default (one per core, two here) writes the
committed files byte for byte. The two ViTs train in a little over 2 minutes on one core.
"""

import math
import sys
from pathlib import Path

import onnx
import torch
from torch import nn

torch.backends.mha.set_fastpath_enabled(False)  # the fused CPU kernel is not exportable


class EncoderLayer(nn.Module):
    """nn.TransformerEncoderLayer with an optional constant causal mask."""

    def __init__(self, act: str, norm_first: bool, causal: bool, d=32, heads=4, ff=64, seq=8):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation=act, batch_first=True,
                                                norm_first=norm_first)
        self.causal = causal
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, x):
        if self.causal:
            return self.layer(x, src_mask=self.mask, is_causal=True)
        return self.layer(x, src_mask=None, is_causal=False)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.dh = heads, hidden // heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.dense = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.dh).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + mask
        context = torch.matmul(scores.softmax(dim=-1), v).permute(0, 2, 1, 3).contiguous()
        context = context.view(x.shape[0], x.shape[1], -1)
        return self.norm(x + self.dense(context))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ff):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.intermediate = nn.Linear(hidden, ff)
        self.output = nn.Linear(ff, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        h = self.attention(x, mask)
        return self.norm(h + self.output(nn.functional.gelu(self.intermediate(h))))


class Bert(nn.Module):
    def __init__(self, seq=32, hidden=64, heads=4, ff=256, layers=2, classes=3, padded=6):
        super().__init__()
        self.embed_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ff) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)
        attention = torch.ones(1, seq)
        attention[:, seq - padded:] = 0.0  # the last tokens are padding
        self.register_buffer("attention", attention)

    def forward(self, embeddings):
        mask = (1.0 - self.attention[:, None, None, :]) * -10000.0
        h = self.embed_norm(embeddings)
        for layer in self.layers:
            h = layer(h, mask)
        return self.classifier(torch.tanh(self.pooler(h[:, 0])))


class ViT(nn.Module):
    def __init__(self, pool: str, image=32, patch=8, hidden=64, heads=4, ff=128, layers=2, classes=10):
        super().__init__()
        self.pool = pool
        self.patch = nn.Conv2d(3, hidden, patch, stride=patch)
        tokens = (image // patch) ** 2 + (pool == "cls")
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, hidden))
        self.position = nn.Parameter(0.02 * torch.randn(1, tokens, hidden))
        layer = nn.TransformerEncoderLayer(hidden, heads, ff, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, image):
        x = self.patch(image).flatten(2).transpose(1, 2)
        if self.pool == "cls":
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.norm(self.encoder(x + self.position))
        return self.head(x[:, 0] if self.pool == "cls" else x.mean(dim=1))


def settled(model: nn.Module) -> nn.Module:
    """``model`` with its biases and LayerNorm scales and shifts moved off their initial zeros and ones, as training
    leaves them: otherwise an exporter may drop an add of zeros or merge equal initializers, and the two
    exporters of one layer would differ for a reason that is not theirs."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


def train(model: nn.Module, batch, steps: int = 400, lr: float = 1e-3, one_cycle: bool = False,
          checks: int = 1) -> float:
    """Adam steps on a synthetic task (``batch()`` -> inputs, labels), so that the classifiers decide with the
    margins a trained model has rather than a random one's near-ties: at ``lr``, or with ``one_cycle`` a warm-up
    to ``lr`` and a cosine decay to almost 0 (OneCycleLR). Returns the accuracy on ``checks`` fresh batches."""
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=steps) if one_cycle else None
    for _ in range(steps):
        x, y = batch()
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
    model.eval()
    with torch.no_grad():
        right = 0.0
        for _ in range(checks):
            x, y = batch()
            right += float((model(x).argmax(-1) == y).float().mean())
        return right / checks


def _token_batch(directions: torch.Tensor, size: int = 64):
    """Token embeddings N(0, 1) of 32 tokens; the class: the direction the unpadded tokens' mean leans most to."""
    x = torch.randn(size, 32, 64)
    return x, (x[:, :26].mean(1) @ directions.T).argmax(-1)


def _image_batch(filters: torch.Tensor, size: int = 64):
    """Images U(-1, 1); the class: which of 10 fixed random filters of 8x8 patches (``filters``, 10x3x8x8) responds
    most on average over the image's 16 patches."""
    x = torch.rand(size, 3, 32, 32) * 2 - 1
    return x, nn.functional.conv2d(x, filters, stride=8).mean((2, 3)).argmax(-1)


def export(model: nn.Module, example: torch.Tensor, path: Path, opset: int, dynamo: bool, **options) -> None:
    model.eval()
    torch.onnx.export(model, (example,), str(path), opset_version=opset, dynamo=dynamo, input_names=["x"],
                      output_names=["y"], **options)
    proto = onnx.load(str(path))  # the weights inside the file, not beside it
    for node in proto.graph.node:  # the dynamo exporter's per-node stack traces: local paths, nothing hlsfuse reads
        del node.metadata_props[:]
    onnx.save(proto, str(path))
    data = path.with_name(path.name + ".data")
    if data.exists():
        data.unlink()
    print(path)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for act in ("gelu", "relu"):
        for norm_first in (False, True):
            place = "pre" if norm_first else "post"
            for causal in (False, True):
                torch.manual_seed(len(act) + 2 * norm_first + 4 * causal)
                name = f"tel_{act}_{place}" + ("_causal" if causal else "")
                export(settled(EncoderLayer(act, norm_first, causal)), torch.randn(1, 8, 32), out / f"{name}.onnx", 18,
                       True)
            torch.manual_seed(len(act) + 2 * norm_first + 4)  # tel_<act>_<place>_causal's weights, exported again
            export(settled(EncoderLayer(act, norm_first, True)), torch.randn(1, 8, 32),
                   out / f"tel_legacy_{act}_{place}.onnx", 14, False)
    torch.manual_seed(0)
    sequence = torch.export.Dim("sequence", min=2, max=64)
    export(settled(EncoderLayer("gelu", False, False)), torch.randn(1, 8, 32), out / "dynamic_sequence.onnx", 18, True,
           dynamic_shapes={"x": {1: sequence}})
    torch.manual_seed(7)
    bert, directions = Bert(), torch.randn(3, 64)
    print(f"bert2 trained: accuracy {train(bert, lambda: _token_batch(directions)):.2f}")
    export(bert, torch.randn(1, 32, 64), out / "bert2.onnx", 13, False)
    for pool, opset in (("cls", 21), ("mean", 18)):
        torch.manual_seed(11)
        filters = torch.randn(10, 3, 8, 8)
        vit = ViT(pool)
        accuracy = train(vit, lambda f=filters: _image_batch(f), steps=6000, lr=2e-3, one_cycle=True, checks=32)
        print(f"vit_{pool} trained: accuracy {accuracy:.3f}")
        export(vit, torch.rand(1, 3, 32, 32) * 2 - 1, out / f"vit_{pool}.onnx", opset, True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)

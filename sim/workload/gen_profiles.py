#!/usr/bin/python3
"""gen_profiles.py: writes the built-in workload profiles, sim/workload/profiles/NAME.json, from
the models' own definitions: torchvision's ResNet-18 (CIFAR variant), ResNet-50 and VGG16 run
once on the CPU with forward hooks (the spatial sizes come from the forward pass, not by hand);
BERT-base and GPT-2 small written as explicit shapes from their papers and Hugging Face configs.

Not run by the build or CI: the JSON files are committed, and embedded into bellows at build
time. To regenerate (Debian: apt-get install python3-torchvision, which brings python3-torch):

    /usr/bin/python3 sim/workload/gen_profiles.py        # from the repository's root
    /usr/bin/python3 sim/workload/gen_profiles.py resnet9-cifar   # one of them (no torch)

Counting convention (sim/workload/README.md says the same), per sample, in flops:
  - a multiply-add is 2 flops; conv: 2*K*K*Cin/groups*Cout*Hout*Wout, plus Cout*Hout*Wout for a
    bias; linear: 2*in*out per token, plus out per token for a bias;
  - attention: QK^T and softmax(QK^T)V are 2*T*T*d each per sequence (all heads, the full
    T x T matrix even under a causal mask, as dense kernels compute it);
  - elementwise, per element: batch/layer norm 8 (mean 1, variance 3, normalise 2, affine 2),
    ReLU 1, GELU and tanh 8, softmax 5 (max, subtract, exp, sum, divide), attention scale 1,
    causal mask 1, dropout 1, residual add 1, max pool K*K per output, average pool 1 per input,
    an embedding sum 1 per element per added table;
  - backward: 2x forward for a layer with weights (input gradient and weight gradient; a tied
    weight counts where it is used), 1x for the first layer with weights (no input gradient),
    2x for the attention products (a gradient for each of their two inputs), 1x for the other
    parameter-free layers.
"""

import json
import os
import sys

NORM_FLOPS = 8
RELU_FLOPS = 1
GELU_FLOPS = 8
SOFTMAX_FLOPS = 5
DROPOUT_FLOPS = 1
ADD_FLOPS = 1

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")


def numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


class Profile:
    """Layers in forward order, each: name, forward flops, backward multiplier, tensors."""

    def __init__(self, name):
        self.name = name
        self.layers = []
        self.macs = 0  # multiply-adds of the convs and linears (weights x inputs), forward

    def add(self, name, fwd, tensors=(), weighted=None, bwd_mult=None):
        if weighted is None:
            weighted = len(tensors) > 0
        self.layers.append({"name": name, "fwd": int(fwd), "weighted": weighted,
                            "bwd_mult": bwd_mult, "tensors": list(tensors)})

    def finish(self):
        first = True
        for L in self.layers:
            if L["bwd_mult"] is None:
                if L["weighted"]:
                    L["bwd_mult"] = 1 if first else 2
                    first = False
                else:
                    L["bwd_mult"] = 1
            elif L["weighted"]:
                first = False
        return self

    def n_params(self):
        return sum(numel(t[1]) for L in self.layers for t in L["tensors"])

    def n_tensors(self):
        return sum(len(L["tensors"]) for L in self.layers)

    def fwd(self):
        return sum(L["fwd"] for L in self.layers)

    def bwd(self):
        return sum(L["fwd"] * L["bwd_mult"] for L in self.layers)

    def write(self, source):
        assert len(source) < 512, len(source)
        lines = ["{", '  "name": %s,' % json.dumps(self.name),
                 '  "source": %s,' % json.dumps(source), '  "compute": "flops",', '  "layers": [']
        for i, L in enumerate(self.layers):
            assert len(L["name"]) < 64, L["name"]
            entry = {"name": L["name"], "fwd_flops": L["fwd"],
                     "bwd_flops": L["fwd"] * L["bwd_mult"],
                     "tensors": [{"name": n, "shape": [int(s) for s in shape]}
                                 for n, shape in L["tensors"]]}
            for n, _ in L["tensors"]:
                assert len(n) < 64, n
            comma = "," if i + 1 < len(self.layers) else ""
            lines.append("    " + json.dumps(entry, separators=(", ", ": ")) + comma)
        lines += ["  ]", "}", ""]
        path = os.path.join(OUT_DIR, self.name + ".json")
        with open(path, "w") as f:
            f.write("\n".join(lines))
        return path


# ---- vision models: torchvision, one forward pass with hooks ----

def vision_profile(name, model, input_shape):
    import torch
    import torchvision

    prof = Profile(name)
    calls = []  # (qualified name, module, input shape, output shape), in call order
    seen = {}

    def leaf_hook(qname):
        def hook(mod, inp, out):
            n = seen.get(qname, 0) + 1
            seen[qname] = n
            calls.append((qname if n == 1 else "%s#%d" % (qname, n), mod,
                          tuple(inp[0].shape), tuple(out.shape), n == 1))
        return hook

    def block_hook(qname):
        # a residual block adds its shortcut just before its last ReLU (torchvision's
        # BasicBlock and Bottleneck: out += identity; out = self.relu(out))
        def hook(mod, inp, out):
            last = calls.pop()
            calls.append((qname + ".add", None, tuple(out.shape), tuple(out.shape), False))
            calls.append(last)
        return hook

    blocks = (torchvision.models.resnet.BasicBlock, torchvision.models.resnet.Bottleneck)
    for qname, mod in model.named_modules():
        if len(list(mod.children())) == 0 and not isinstance(mod, torch.nn.Identity):
            mod.register_forward_hook(leaf_hook(qname))
        elif isinstance(mod, blocks):
            mod.register_forward_hook(block_hook(qname))
    model.train()  # batch norm in training mode, as in data-parallel training
    with torch.no_grad():
        model(torch.zeros((2,) + input_shape))  # batch 2: training-mode batch norm needs > 1
    for qname, mod, ishape, oshape, first_call in calls:
        ishape, oshape = (1,) + ishape[1:], (1,) + oshape[1:]  # per sample
        tensors = []
        if mod is not None and first_call:
            base = qname
            tensors = [(base + "." + pn, tuple(p.shape))
                       for pn, p in mod.named_parameters(recurse=False)]
        prof.add(qname, vision_layer_flops(prof, mod, ishape, oshape), tensors)
    assert len(calls) == len(prof.layers)
    return prof.finish()


def vision_layer_flops(prof, mod, ishape, oshape):
    import torch.nn as nn

    if mod is None:  # the residual add
        return ADD_FLOPS * numel(oshape)
    if isinstance(mod, nn.Conv2d):
        k = mod.kernel_size[0] * mod.kernel_size[1]
        macs = k * (mod.in_channels // mod.groups) * numel(oshape)
        prof.macs += macs
        return 2 * macs + (numel(oshape) if mod.bias is not None else 0)
    if isinstance(mod, nn.Linear):
        macs = mod.in_features * numel(oshape)
        prof.macs += macs
        return 2 * macs + (numel(oshape) if mod.bias is not None else 0)
    if isinstance(mod, nn.BatchNorm2d):
        return NORM_FLOPS * numel(oshape)
    if isinstance(mod, nn.ReLU):
        return RELU_FLOPS * numel(oshape)
    if isinstance(mod, nn.MaxPool2d):
        k = mod.kernel_size
        return (k * k if isinstance(k, int) else numel(k)) * numel(oshape)
    if isinstance(mod, (nn.AdaptiveAvgPool2d, nn.AvgPool2d)):
        return numel(ishape)
    if isinstance(mod, nn.Dropout):
        return DROPOUT_FLOPS * numel(oshape)
    raise SystemExit("gen_profiles: no flop count for %s" % type(mod).__name__)


def check(label, value, published, tol):
    rel = abs(value - published) / published
    print("%-16s %s: %.4g vs published %.4g (%+.1f%%)" % (label, "check", value, published,
                                                            100 * (value - published) / published))
    assert rel <= tol, "%s: %.4g is not within %.0f%% of %.4g" % (label, value, 100 * tol,
                                                                 published)


def resnet18_cifar():
    import torch
    import torchvision

    # The CIFAR-10 ResNet-18 of kuangliu/pytorch-cifar and of the PowerSGD and Accordion code:
    # a 3x3 stride-1 stem with 64 channels, no max pool, 32x32 input, 10 classes.
    m = torchvision.models.resnet18(weights=None, num_classes=10)
    m.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    m.maxpool = torch.nn.Identity()
    assert sum(p.numel() for p in m.parameters()) == 11173962
    assert len(list(m.parameters())) == 62
    p = vision_profile("resnet18-cifar", m, (3, 32, 32))
    check("resnet18-cifar", p.macs, 0.556e9, 0.02)
    p.write("torchvision 0.14 resnet18 with a 3x3 stride-1 stem, no max pool and 10 classes, "
            "as kuangliu/pytorch-cifar and the PowerSGD/Accordion code (He et al. 2016); "
            "32x32 input; forward %.3f G multiply-adds in conv/fc (published: 0.56 G); "
            "flops by sim/workload/gen_profiles.py's convention" % (p.macs / 1e9))
    return p


def resnet50():
    import torchvision

    m = torchvision.models.resnet50(weights=None)
    assert sum(p.numel() for p in m.parameters()) == 25557032
    assert len(list(m.parameters())) == 161
    p = vision_profile("resnet50", m, (3, 224, 224))
    check("resnet50", p.macs, 4.09e9, 0.02)
    p.write("torchvision 0.14 resnet50 (He et al. 2016), 224x224, 1000 classes; forward %.3f G "
            "multiply-adds in conv/fc (torchvision docs: 4.09 GFLOPS, counted as multiply-adds); "
            "flops by sim/workload/gen_profiles.py's convention" % (p.macs / 1e9))
    return p


def tf_layout(p, name):
    """The same model with its weights as TensorFlow stores them: convolution kernels
    [kh, kw, in, out] (HWIO; tf_cnn_benchmarks convnet_builder.py) and dense kernels [in, out],
    PyTorch's [out, in, kh, kw] and [out, in] permuted. The compute is unchanged; what changes
    is the matrix a compressor sees (rows = shape[0]), as GRACE's TensorFlow PowerSGD reshapes
    each tensor to [shape[0], -1] (grace_dl/tensorflow/compressor/powersgd.py)."""
    q = Profile(name)
    q.macs = p.macs
    for L in p.layers:
        tensors = []
        for n, shape in L["tensors"]:
            s = [int(x) for x in shape]
            if len(s) == 4:
                s = [s[2], s[3], s[1], s[0]]
            elif len(s) == 2:
                s = [s[1], s[0]]
            tensors.append((n, s))
        q.layers.append(dict(L, tensors=tensors))
    return q


def resnet50_tf(p):
    q = tf_layout(p, "resnet50-tf")
    q.write("resnet50 (torchvision 0.14, He et al. 2016) with TensorFlow's weight layouts, conv "
            "kernels [kh, kw, in, out] and the fc kernel [in, out], as GRACE's TensorFlow "
            "benchmarks hold them; the compute is resnet50's, flops by "
            "sim/workload/gen_profiles.py's convention")
    return q


def vgg16():
    import torchvision

    m = torchvision.models.vgg16(weights=None)
    assert sum(p.numel() for p in m.parameters()) == 138357544
    assert len(list(m.parameters())) == 32
    p = vision_profile("vgg16", m, (3, 224, 224))
    check("vgg16", p.macs, 15.47e9, 0.02)
    p.write("torchvision 0.14 vgg16 (Simonyan and Zisserman 2015), 224x224, 1000 classes; "
            "forward %.2f G multiply-adds in conv/fc (torchvision docs: 15.47 GFLOPS, counted as "
            "multiply-adds); flops by sim/workload/gen_profiles.py's convention" % (p.macs / 1e9))
    return p


def resnet9_cifar():
    """The ResNet-9 of GRACE's PyTorch CIFAR-10 runs (sands-lab/grace, examples/dist/
    CIFAR10-dawndist/dawn.py, David Page's DAWNBench net of cifar10-fast), written as explicit
    shapes (its Network is a dict of layers, not a torchvision model): prep conv_bn(3, 64);
    layer1 conv_bn(64, 128), max pool 2, residual (two conv_bn(128, 128), add); layer2
    conv_bn(128, 256), max pool 2; layer3 conv_bn(256, 512), max pool 2, residual (two
    conv_bn(512, 512), add); max pool 4, flatten, linear(512, 10) without bias, times 0.125.
    conv_bn is a 3x3 stride-1 conv without bias, batch norm and ReLU."""
    p = Profile("resnet9-cifar")

    def conv_bn(name, c_in, c_out, hw):
        out = c_out * hw * hw
        macs = 9 * c_in * out
        p.macs += macs
        p.add(name + ".conv", 2 * macs, [(name + ".conv.weight", (c_out, c_in, 3, 3))])
        p.add(name + ".bn", NORM_FLOPS * out, [(name + ".bn.weight", (c_out,)),
                                               (name + ".bn.bias", (c_out,))])
        p.add(name + ".relu", RELU_FLOPS * out)

    def pool(name, c, hw_out, k):
        p.add(name, k * k * c * hw_out * hw_out)

    def residual(name, c, hw):
        conv_bn(name + ".res1", c, c, hw)
        conv_bn(name + ".res2", c, c, hw)
        p.add(name + ".add", ADD_FLOPS * c * hw * hw)

    conv_bn("prep", 3, 64, 32)
    conv_bn("layer1", 64, 128, 32)
    pool("layer1.pool", 128, 16, 2)
    residual("layer1.residual", 128, 16)
    conv_bn("layer2", 128, 256, 16)
    pool("layer2.pool", 256, 8, 2)
    conv_bn("layer3", 256, 512, 8)
    pool("layer3.pool", 512, 4, 2)
    residual("layer3.residual", 512, 4)
    pool("pool", 512, 1, 4)
    p.macs += 512 * 10
    p.add("linear", 2 * 512 * 10, [("linear.weight", (10, 512))])
    p.add("classifier", 10)  # Mul(0.125)
    p.finish()
    assert p.n_params() == 6573120, p.n_params()
    p.write("GRACE's ResNet-9 for CIFAR-10 (sands-lab/grace examples/dist/CIFAR10-dawndist/"
            "dawn.py; David Page's DAWNBench net): 32x32 input, 6,573,120 parameters; forward "
            "%.3f G multiply-adds in conv/fc; flops by sim/workload/gen_profiles.py's convention"
            % (p.macs / 1e9))
    return p


# ---- transformers: explicit shapes ----

def linear(prof, name, d_in, d_out, tokens, bias=True, weight_shape=None, tied=False):
    """A linear layer on `tokens` tokens. weight_shape: as the framework stores it ([out, in]
    for nn.Linear, [in, out] for GPT-2's Conv1D); tied: its weight is another layer's tensor."""
    prof.macs += d_in * d_out * tokens
    fwd = 2 * d_in * d_out * tokens + (d_out * tokens if bias else 0)
    tensors = []
    if not tied:
        tensors.append((name + ".weight", weight_shape or (d_out, d_in)))
    if bias:
        tensors.append((name + ".bias", (d_out,)))
    prof.add(name, fwd, tensors, weighted=True)


def norm(prof, name, d, tokens):
    prof.add(name, NORM_FLOPS * d * tokens, [(name + ".weight", (d,)), (name + ".bias", (d,))])


def attention(prof, pre, T, d, heads, causal):
    """The two attention products of one layer and the elementwise work on the T x T scores."""
    per_score = 1 + (1 if causal else 0) + SOFTMAX_FLOPS + DROPOUT_FLOPS  # scale, mask, softmax
    prof.add(pre + "scores", 2 * T * T * d + per_score * heads * T * T, bwd_mult=2)
    prof.add(pre + "context", 2 * T * T * d, bwd_mult=2)


def bert_base(T=128):
    # BERT-base uncased (Devlin et al. 2019, NAACL): 12 layers, hidden 768, 12 heads, FFN 3072;
    # Hugging Face bert-base-uncased config.json: vocab_size 30522, max_position_embeddings 512,
    # type_vocab_size 2, hidden_act gelu. Pre-training form, as BertForPreTraining: the encoder,
    # the pooler, the MLM head (transform, and the decoder whose weight is tied to the word
    # embeddings, with its own bias, on all T positions) and the next-sentence head; the
    # tensor names are Hugging Face's.
    L, d, h, ff, V, P, types = 12, 768, 12, 3072, 30522, 512, 2
    p = Profile("bert-base")
    e = "bert.embeddings."
    p.add(e + "sum", 2 * T * d, [(e + "word_embeddings.weight", (V, d)),
                                 (e + "position_embeddings.weight", (P, d)),
                                 (e + "token_type_embeddings.weight", (types, d))])
    norm(p, e + "LayerNorm", d, T)
    p.add(e + "dropout", DROPOUT_FLOPS * T * d)
    for i in range(L):
        pre = "bert.encoder.layer.%d." % i
        for w in ("query", "key", "value"):
            linear(p, pre + "attention.self." + w, d, d, T)
        attention(p, pre + "attention.self.", T, d, h, causal=False)
        linear(p, pre + "attention.output.dense", d, d, T)
        p.add(pre + "attention.output.add", (DROPOUT_FLOPS + ADD_FLOPS) * T * d)
        norm(p, pre + "attention.output.LayerNorm", d, T)
        linear(p, pre + "intermediate.dense", d, ff, T)
        p.add(pre + "intermediate.gelu", GELU_FLOPS * T * ff)
        linear(p, pre + "output.dense", ff, d, T)
        p.add(pre + "output.add", (DROPOUT_FLOPS + ADD_FLOPS) * T * d)
        norm(p, pre + "output.LayerNorm", d, T)
    linear(p, "bert.pooler.dense", d, d, 1)
    p.add("bert.pooler.tanh", GELU_FLOPS * d)
    linear(p, "cls.predictions.transform.dense", d, d, T)
    p.add("cls.predictions.transform.gelu", GELU_FLOPS * T * d)
    norm(p, "cls.predictions.transform.LayerNorm", d, T)
    # the decoder: tied weight; its bias is Hugging Face's cls.predictions.bias
    p.macs += d * V * T
    p.add("cls.predictions.decoder", 2 * d * V * T + V * T, [("cls.predictions.bias", (V,))],
          weighted=True)
    linear(p, "cls.seq_relationship", d, 2, 1)
    p.finish()
    n = p.n_params()
    assert n == 110106428, n  # Hugging Face BertForPreTraining, bert-base-uncased
    assert p.n_tensors() == 206, p.n_tensors()
    # published check: 2 x parameters x tokens plus the attention products 4 x L x T^2 x d
    ref = 2 * n * T + 4 * L * T * T * d
    check("bert-base", p.fwd(), ref, 0.05)
    p.write("BERT-base uncased (Devlin et al. 2019), Hugging Face config (vocab 30522, 512 "
            "positions, 2 types), BertForPreTraining: MLM head (tied decoder, all positions) and "
            "NSP head; sequence 128; forward %.1f GFLOPs vs 2 x params x tokens + 4 x L x T^2 x d "
            "= %.1f; flops by sim/workload/gen_profiles.py's convention" % (p.fwd() / 1e9,
                                                                            ref / 1e9))
    return p


def gpt2_blocks(p, L, d, h, V, P, T, wte="transformer.wte.weight"):
    """GPT-2's embeddings, L blocks (pre-norm, Conv1D weights stored [in, out]), final norm and an
    LM head tied to the token embedding, as Hugging Face's GPT2LMHeadModel names them."""
    p.add("transformer.embed", ADD_FLOPS * T * d, [(wte, (V, d)), ("transformer.wpe.weight", (P, d))])
    p.add("transformer.drop", DROPOUT_FLOPS * T * d)
    for i in range(L):
        pre = "transformer.h.%d." % i
        norm(p, pre + "ln_1", d, T)
        linear(p, pre + "attn.c_attn", d, 3 * d, T, weight_shape=(d, 3 * d))
        attention(p, pre + "attn.", T, d, h, causal=True)
        linear(p, pre + "attn.c_proj", d, d, T, weight_shape=(d, d))
        p.add(pre + "attn.add", (DROPOUT_FLOPS + ADD_FLOPS) * T * d)
        norm(p, pre + "ln_2", d, T)
        linear(p, pre + "mlp.c_fc", d, 4 * d, T, weight_shape=(d, 4 * d))
        p.add(pre + "mlp.gelu", GELU_FLOPS * T * 4 * d)
        linear(p, pre + "mlp.c_proj", 4 * d, d, T, weight_shape=(4 * d, d))
        p.add(pre + "mlp.add", (DROPOUT_FLOPS + ADD_FLOPS) * T * d)
    norm(p, "transformer.ln_f", d, T)
    linear(p, "lm_head", d, V, T, bias=False, tied=True)
    return p.finish()


def gpt2_small(T=1024):
    # GPT-2 small (Radford et al. 2019): 12 layers, d 768, 12 heads, FFN 4 x 768, vocab 50257,
    # 1024 positions; Hugging Face gpt2 config.json. GPT2LMHeadModel: the LM head's weight is
    # tied to wte; Hugging Face names, and its Conv1D weights stored [in, out].
    L, d, h, V, P = 12, 768, 12, 50257, 1024
    p = gpt2_blocks(Profile("gpt2-small"), L, d, h, V, P, T)
    n = p.n_params()
    assert n == 124439808, n
    assert p.n_tensors() == 148, p.n_tensors()
    ref = 2 * n * T + 4 * L * T * T * d
    check("gpt2-small", p.fwd(), ref, 0.05)
    p.write("GPT-2 small (Radford et al. 2019), Hugging Face gpt2 config (vocab 50257, 1024 "
            "positions), GPT2LMHeadModel with the LM head tied to wte; sequence 1024; forward "
            "%.1f GFLOPs vs 2 x params x tokens + 4 x L x T^2 x d = %.1f; flops by "
            "sim/workload/gen_profiles.py's convention" % (p.fwd() / 1e9, ref / 1e9))
    return p


def gpt2_xl(T=1024):
    # GPT-2 XL (Radford et al. 2019, Table 2: 48 layers, d_model 1600, "1542M" parameters);
    # Hugging Face gpt2-xl config.json: n_layer 48, n_embd 1600, n_head 25, vocab 50257,
    # n_positions 1024. GPT2LMHeadModel counts 1,557,611,200 parameters (the paper's table
    # rounds its own count differently); the LM head is tied to wte. A model that needs sharding
    # on the smaller GPUs (issue 50): 16 Psi = 24.9 GB with Adam.
    L, d, h, V, P = 48, 1600, 25, 50257, 1024
    p = gpt2_blocks(Profile("gpt2-xl"), L, d, h, V, P, T)
    n = p.n_params()
    assert n == 1557611200, n
    assert p.n_tensors() == 580, p.n_tensors()
    ref = 2 * n * T + 4 * L * T * T * d
    check("gpt2-xl", p.fwd(), ref, 0.05)
    p.write("GPT-2 XL (Radford et al. 2019, Table 2: 48 layers, d 1600), Hugging Face gpt2-xl "
            "config (25 heads, vocab 50257, 1024 positions), GPT2LMHeadModel, head tied to wte; "
            "sequence 1024; forward %.2f TFLOPs vs 2 x params x tokens + 4 x L x T^2 x d = %.2f; "
            "flops by sim/workload/gen_profiles.py's convention" % (p.fwd() / 1e12, ref / 1e12))
    return p


def gpt2_18b(T=1024):
    # The 18-billion-parameter GPT-2 of DeepSpeed's ZeRO++ tutorial (deepspeed.ai/tutorials/zeropp,
    # docs/_tutorials/zeropp.md in microsoft/DeepSpeed: Megatron-DeepSpeed, --num-layers 40
    # --hidden-size 6144 --num-attention-heads 32 --checkpoint-activations), the 18B model of
    # ZeRO++'s figures (Wang et al. 2023; blogs/zeropp). Megatron's GPT: vocab 50257 padded to
    # 50304 (make_vocab_size_divisible_by 128), positions = the sequence, the output layer tied
    # to the word embedding; GPT-2's block shapes, so gpt2_blocks' names. Sequence 1024 (the
    # figures give 1K or 2K tokens a GPU, not the sequence: assumed). With activation
    # checkpointing every block's forward is run again in the backward: its layers' backward is
    # counted 3 x their forward (2 + the recomputation), which is what Megatron's TFLOPs counts
    # (megatron/utils.py throughput_calculator: checkpoint factor 4 on 24 B s L h^2).
    L, d, h, V, P = 40, 6144, 32, 50304, T
    p = gpt2_blocks(Profile("gpt2-18b"), L, d, h, V, P, T)
    for layer in p.layers:
        if layer["name"].startswith("transformer.h."):
            layer["bwd_mult"] += 1
    n = p.n_params()
    assert n == 12 * L * d * d + 13 * L * d + (V + P) * d + 2 * d, n
    ref = 2 * n * T + 4 * L * T * T * d
    check("gpt2-18b", p.fwd(), ref, 0.05)
    p.write("GPT-2 18B of DeepSpeed's ZeRO++ tutorial (Megatron-DeepSpeed: 40 layers, hidden 6144, "
            "32 heads, vocab 50304, head tied), activation checkpointing (blocks' backward = 3 x "
            "forward); sequence 1024 (assumed); forward %.1f TFLOPs vs 2 x params x tokens + "
            "4 x L x T^2 x d = %.1f; flops by sim/workload/gen_profiles.py's convention"
            % (p.fwd() / 1e12, ref / 1e12))
    return p


def llama2_7b(T=4096):
    # Llama-2-7B (Touvron et al. 2023, "Llama 2", Table 1 and section 2.2; Hugging Face
    # meta-llama/Llama-2-7b-hf config.json): 32 layers, hidden 4096, 32 heads (no grouped-query
    # attention at 7B), SwiGLU FFN 11008, vocab 32000, context 4096, RMSNorm (a weight, no
    # bias), no biases, an untied LM head; Hugging Face's LlamaForCausalLM names. Rotary
    # embeddings' elementwise work is left out (a few flops a value, as the norms' convention).
    # A model that needs sharding (issue 50): 6,738,415,616 parameters.
    L, d, h, ff, V = 32, 4096, 32, 11008, 32000
    p = Profile("llama-2-7b")
    p.add("model.embed_tokens", 0, [("model.embed_tokens.weight", (V, d))])

    def rms(name):
        p.add(name, NORM_FLOPS * d * T, [(name + ".weight", (d,))])
    for i in range(L):
        pre = "model.layers.%d." % i
        rms(pre + "input_layernorm")
        for w in ("q_proj", "k_proj", "v_proj"):
            linear(p, pre + "self_attn." + w, d, d, T, bias=False)
        attention(p, pre + "self_attn.", T, d, h, causal=True)
        linear(p, pre + "self_attn.o_proj", d, d, T, bias=False)
        p.add(pre + "self_attn.add", ADD_FLOPS * T * d)
        rms(pre + "post_attention_layernorm")
        linear(p, pre + "mlp.gate_proj", d, ff, T, bias=False)
        linear(p, pre + "mlp.up_proj", d, ff, T, bias=False)
        p.add(pre + "mlp.act", (GELU_FLOPS + 1) * T * ff)  # SiLU(gate) x up
        linear(p, pre + "mlp.down_proj", ff, d, T, bias=False)
        p.add(pre + "mlp.add", ADD_FLOPS * T * d)
    rms("model.norm")
    linear(p, "lm_head", d, V, T, bias=False)
    p.finish()
    n = p.n_params()
    assert n == 6738415616, n  # Llama-2-7b-hf's parameter count
    assert p.n_tensors() == 291, p.n_tensors()
    ref = 2 * n * T + 4 * L * T * T * d
    check("llama-2-7b", p.fwd(), ref, 0.05)
    p.write("Llama-2-7B (Touvron et al. 2023, Table 1; Hugging Face Llama-2-7b-hf config: 32 "
            "layers, d 4096, 32 heads, SwiGLU 11008, vocab 32000, RMSNorm, untied head); "
            "sequence 4096; forward %.1f TFLOPs vs 2 x params x tokens + 4 x L x T^2 x d = %.1f; "
            "flops by sim/workload/gen_profiles.py's convention" % (p.fwd() / 1e12, ref / 1e12))
    return p


def main(names):
    """Every profile, or those named (resnet9-cifar, bert-base and the transformers need no
    torch)."""
    os.makedirs(OUT_DIR, exist_ok=True)
    makers = (resnet18_cifar, resnet50, vgg16, resnet9_cifar, bert_base, gpt2_small, llama2_7b,
              gpt2_xl, gpt2_18b)
    for make in makers:
        if names and make.__name__.replace("_", "-") not in names:
            continue
        p = make()
        if make is resnet50:
            q = resnet50_tf(p)
            print("%-16s %12d params (TensorFlow's layouts)" % (q.name, q.n_params()))
        print("%-16s %12d params %4d tensors %4d layers  fwd %.4g  bwd %.4g  fwd MACs %.4g"
              % (p.name, p.n_params(), p.n_tensors(), len(p.layers), p.fwd(), p.bwd(), p.macs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

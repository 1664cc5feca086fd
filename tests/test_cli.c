/* test_cli.c: the bellows binary on bad invocations (fixtures: spoilt IDX folders, broken
 * platforms and traces, written at run time): each must exit with the expected status (2 usage),
 * print exactly one line on stderr that starts "bellows: " and names the flag or file, and leave
 * the scratch folder as it was (no output, no temporary, nothing half-written). Good
 * invocations: test_cli_runs.c. */
#include "testutil.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "clirun.h"
#include "smalldata.h"

typedef struct {
    const char *args; /* "@" stands for the scratch folder TMP */
    int status;
    const char *needle; /* must appear in the one-line message */
} BadCase;

static const BadCase BAD[] = {
    {"", 2, "usage"},
    {"bogus", 2, "unknown command 'bogus'"},
    /* a newline in what was typed is quoted as '?': the message stays one line */
    {"\"$(printf 'bo\\ngus')\"", 2, "unknown command 'bo?gus'"},
    {"train --model \"$(printf 'a\\nb')\"", 2,
     "--model: expected one of softmax|mlp|cnn|resnet, got 'a?b'"},
    {"train --model resnet18", 2,
     "--model: expected one of softmax|mlp|cnn|resnet, got 'resnet18'"},
    {"train --model cnn --widths 8", 2, "--widths: applies to --model resnet only"},
    {"train --model resnet --widths 8,8,8,8,8", 2, "--widths"},
    {"train --model resnet --blocks 0", 2, "--blocks"},
    {"train --model", 2, "--model: missing value"},
    {"train --batch -3", 2, "--batch"},
    {"train --batch 0", 2, "--batch"},
    {"train --batch abc", 2, "--batch: expected an integer"},
    {"train --batch 12x", 2, "--batch"},
    {"train --batch 99999999999999999999", 2, "--batch"},
    {"train --epochs 2.5", 2, "--epochs"},
    {"train --epochs 0", 2, "--epochs"},
    {"train --lr nan", 2, "--lr"},
    {"train --lr inf", 2, "--lr"},
    {"train --lr 1e999", 2, "--lr"},
    {"train --lr -0.1", 2, "--lr"},
    {"train --lr 0", 2, "--lr"},
    {"train --lr ''", 2, "--lr"},
    {"train --momentum 1", 2, "--momentum"},
    {"train --momentum -0.5", 2, "--momentum"},
    {"train --weight-decay -1", 2, "--weight-decay"},
    {"train --seed -1", 2, "--seed"},
    {"train --seed 1.5", 2, "--seed"},
    {"train --threads -2", 2, "--threads"},
    {"train --train-samples -5", 2, "--train-samples"},
    {"train --frobnicate 3", 2, "unknown flag '--frobnicate'"},
    {"train -x", 2, "unexpected argument '-x'"},
    {"train mlp", 2, "unexpected argument 'mlp'"},
    {"train --", 2, "unexpected argument"},
    {"train --model=mlp --model=cnn", 2, "--model: given twice"},
    {"train --quiet=1", 2, "--quiet: takes no value"},
    {"train --hidden 64 --model cnn", 2, "--hidden: applies to --model mlp only"},
    {"train --hidden 0", 2, "--hidden"},
    {"train --hidden 64,,32", 2, "--hidden"},
    {"train --hidden 1,2,3,4,5,6,7,8,9", 2, "--hidden: at most 8"},
    {"train --channels 8,16 --model mlp", 2, "--channels: applies to --model cnn only"},
    {"train --channels 8 --model cnn", 2, "--channels: expected two"},
    {"train --channels 8,16,32 --model cnn", 2, "--channels: at most 2"},
    {"train --kernel 4 --model cnn", 2, "--kernel"},
    {"train --kernel 3", 2, "--kernel: applies to --model cnn only"},
    {"train --nesterov --momentum 0", 2, "--nesterov"},
    {"train --optimizer adamw --momentum 0.5", 2, "--momentum: an SGD option; --optimizer adamw"},
    {"run --optimizer adamw --momentum 0.9", 2, "--momentum: an SGD option"},
    {"train --lr-schedule step", 2, "--lr-decay-epochs"},
    {"train --lr-schedule linear", 2, "--lr-schedule"},
    {"train --lr-decay-epochs 3", 2, "--lr-decay-epochs: needs --lr-schedule step"},
    {"train --lr-schedule step --lr-decay-epochs 3,2", 2, "increasing"},
    {"train --lr-decay-factor 2", 2, "--lr-decay-factor"},
    {"train --warmup-epochs -1", 2, "--warmup-epochs"},
    {"train --warmup-epochs 5 --warmup-shape epoch", 2, "add --lr-scale workers"},
    {"train --lr-scale workers --warmup-shape epoch", 2, "needs --warmup-epochs above 0"},
    {"train --lr-scale all", 2, "--lr-scale"},
    {"train --out ''", 2, "--out"},
    {"train --data-dir /nonexistent --out @/o1", 2, "/nonexistent/train-images-idx3-ubyte.gz"},
    {"train --data-dir @/corrupt --out @/o2", 2, "train-images-idx3-ubyte.gz: file is truncated"},
    {"train --data-dir @/afile --out @/o3", 2, "afile/train-images-idx3-ubyte.gz"},
    {"train --train-samples 50 --batch 100 --out @/o4", 2, "--batch: 100 is larger"},
    {"train --train-samples 100 --test-samples 10 --epochs 1 --out @/afile", 2, "is not a folder"},
    {"train --train-samples 100 --test-samples 10 --epochs 1 --out @/afile/sub", 2, "--out"},
    {"platform --workers 0", 2, "--workers: expected an integer in [1, 4096]"},
    {"run --workers 4097", 2, "--workers: expected an integer in [1, 4096], got '4097'"},
    {"run --zeropp qwz:int2 --sharding zero3 --workload gpt2-small", 2,
     "--zeropp: 'qwz:int2' is not one of"},
    {"run --zeropp qwz --workload gpt2-small", 2,
     "--zeropp: ZeRO++'s collectives replace ZeRO-3's"},
    {"run --zeropp hpz --sharding zero3 --costs ideal", 2,
     "--zeropp: its collectives are stages of a costed"},
    {"reproduce zeropp --workload nosuch --out @/z", 2, "--workload"},
    {"run --train-samples 70000", 2, "--train-samples: 70000, but "},
    {"run --train-samples 1 --quiet", 2, "--train-samples: 1 training samples leave nothing"},
    {"platform --workers 6 --gpus-per-node 4 --topology hierarchical", 2, "--gpus-per-node"},
    {"platform --gpus-per-node 2", 2, "--gpus-per-node: needs --topology hierarchical"},
    {"platform --nic-per-gpu", 2, "--nic-per-gpu: needs --topology hierarchical"},
    {"platform --topology ring", 2, "--topology"},
    {"platform --bandwidth 10", 2, "--bandwidth: expected a bandwidth"},
    {"platform --bandwidth 10gbps", 2, "--bandwidth"},
    {"platform --bandwidth -1Gbps", 2, "--bandwidth"},
    {"platform --latency 5", 2, "--latency: expected a duration"},
    {"platform --latency -5us", 2, "--latency"},
    {"platform --intra-bandwidth 300GBps", 2,
     "--intra-bandwidth: applies to --topology hierarchical"},
    {"platform --leaf-size 2", 2, "--leaf-size: applies to --topology fat-tree"},
    {"platform --topology fat-tree --oversubscription 0.5", 2, "--oversubscription"},
    {"platform --gpu B200", 2, "--gpu"},
    {"platform --gpu V100 --precision bf16", 2, "--precision: the V100 has no bf16 rate"},
    {"platform --gpu-flops 10T --gpu H100", 2, "--gpu-flops"},
    /* fp16: a data type (16-bit sharded collectives) with --gpu-flops; no profile gives its rate */
    {"platform --gpu V100 --precision fp16", 2,
     "--precision: the V100 has no fp16 rate in its profile (give the rate with --gpu-flops)"},
    {"platform --gpu-flops 10T --gpu-efficiency 0.5 --precision fp16", 2,
     "--gpu-flops: gives the rate directly; drop --gpu and --gpu-efficiency"},
    {"platform --gpu-flops fast", 2, "--gpu-flops"},
    {"platform --gpu-efficiency 1.5", 2, "--gpu-efficiency"},
    {"platform extra", 2, "unexpected argument"},
    {"platform --platform @/good.xml", 2, "--platform: bellows platform prints generated"},
    /* simulated runs: the data is small so that the checks come after loading it */
    {"run --policy nosuch --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--policy"},
    {"run --policy 'static:level=1.5' --train-samples 256 --test-samples 64 --batch 8 --out @/o1",
     2, "--policy"},
    {"run --policy 'accordion:eta=abc' --train-samples 256 --test-samples 64 --batch 8 --out @/o1",
     2, "eta"},
    {"run --policy 'cpsgd:period=0' --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "period"},
    {"run --policy 'sync:' --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--policy"},
    {"run --compressor nosuch --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--compressor"},
    {"run --compressor 'topk:bogus=1' --train-samples 256 --test-samples 64 --batch 8 --out @/o1",
     2, "--compressor"},
    {"run --allreduce hierarchical --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--allreduce hierarchical"},
    {"run --collectives fast", 2, "--collectives"},
    {"run --network-model lv08", 2, "--network-model"},
    {"run --slowdown 1,2,3 --workers 2", 2, "--slowdown: 3 values for 2 workers"},
    {"run --slowdown 0", 2, "--slowdown"},
    {"run --compute-jitter -1", 2, "--compute-jitter"},
    {"run --target-accuracy 1.5", 2, "--target-accuracy"},
    {"run --stop-at-target --target-accuracy 0", 2, "--stop-at-target"},
    {"run --train-samples 100 --batch 64 --workers 4 --out @/o1", 2, "--batch: 64 per worker"},
    {"run --cfg=network/model:Bogus --train-samples 100 --batch 4 --epochs 1", 2, "--cfg"},
    {"run --platform @/nonexistent.xml --out @/o1", 2, "--platform"},
    {"run --platform @/bad.xml --out @/o1", 2, "SimGrid cannot load it"},
    {"run --platform @/good.xml --hosts a,zz --out @/o1", 2, "--hosts: 'zz' is not a host"},
    {"run --platform @/good.xml --hosts a,a --out @/o1", 2, "listed twice"},
    {"run --platform @/good.xml --workers 9 --out @/o1", 2, "--workers: 9, but"},
    {"run --platform @/good.xml --bandwidth 1Gbps --out @/o1", 2, "--bandwidth: describes"},
    {"run --hosts a,b", 2, "--hosts: needs --platform"},
    {"compare --policies '' --out @/o1", 2, "--policies"},
    {"compare --policies 'eta=1,sync' --out @/o1", 2, "--policies"},
    {"compare --policies 'sync,nosuch' --train-samples 256 --test-samples 64 --batch 8 --out @/o1",
     2, "--policy"},
    {"compare --policy sync", 2, "unknown flag '--policy'"},
    {"compare --jobs 0", 2, "--jobs"},
    {"run --hidden 4096,4096 --workers 256 --train-samples 2048 --test-samples 64 --batch 8 "
     "--out @/o1",
     2, "GiB"},
    {"plot", 2, "plot: expected one result folder"},
    {"plot @", 2, "holds no results"},
    {"plot @/nonexistent", 2, "holds no results"},
    {"merge --out @/o1", 2, "expected the sweep folders"},
    {"merge @", 2, "--out"},
    {"merge --out @/o1 @", 2, "not a sweep folder"},
    {"sweep --bandwidth 1Gbps,10Gbps --train-samples 256 --test-samples 64 --batch 8", 2,
     "--out: a sweep needs an output folder"},
    {"sweep --bandwidth 1Gbps,fast --out @/o1", 2, "--bandwidth"},
    {"sweep --workers 8..4 --out @/o1", 2, "--workers 8..4: an empty or endless range"},
    {"sweep --workers 2..8:x1 --out @/o1", 2, "an empty or endless range"},
    {"sweep --shard 3/2 --out @/o1", 2, "--shard 3/2"},
    {"sweep --workers 2,2 --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--workers: 2 is listed twice"},
    {"sweep --lr 1e-3,1e+3 --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "would share a folder name"},
    {"sweep --policies sync,sync --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--policies: sync is listed twice"},
    {"run --record-trace @/nodir/t.jsonl --train-samples 256 --test-samples 64 --batch 8", 2,
     "--record-trace"},
    {"sweep --seed 3 --seeds 1,2 --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--seed: give --seeds or --seed, not both"},
    {"sweep --policies sync,nosuch --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--policy"},
    {"policies extra", 2, "policies: takes no arguments"},
    /* ---- a folder where a file is expected, and a file where a folder is ---- */
    {"run --platform @ --out @/o1", 2, "--platform"},
    {"replay --trace @ --out @/o1", 2, "--trace"},
    {"compare --cost-band 1 --out @/o1", 2, "--cost-band: expected off or a number of draws"},
    {"compare --cost-band many --out @/o1", 2, "got \"many\""},
    {"run --cost-band 8 --out @/o1", 2, "--cost-band: has no effect alone"},
    {"sweep --cost-band 1 --bandwidth 1Gbps,10Gbps --out @/o1", 2,
     "--cost-band: expected off or a number of draws"},
    {"sweep --cost-band 8,16 --bandwidth 1Gbps,10Gbps --out @/o1", 2, "got \"8,16\""},
    {"bench --workload resnet50 --cost-band 1025", 2, "from 2 to 1024, got \"1025\""},
    {"run --straggler-cv -1 --out @/o1", 2, "--straggler-cv"},
    /* ZeRO-3's schedule (fsdp_args.c, flag_effect.c) */
    {"run --sharding zero3 --fsdp-unit 0 --out @/o1", 2, "--fsdp-unit: expected layer"},
    {"run --sharding zero3 --fsdp-unit size:abc --out @/o1", 2, "--fsdp-unit: size:MB"},
    {"run --sharding zero3 --backward-prefetch sideways --out @/o1", 2, "--backward-prefetch"},
    {"run --sharding zero3 --limit-all-gathers -1 --out @/o1", 2, "--limit-all-gathers"},
    {"run --rs-comm own --out @/o1", 2, "--rs-comm: has no effect alone"},
    {"run --sharding zero2 --workload resnet18-cifar --forward-prefetch on --out @/o1", 2,
     "--forward-prefetch: has no effect alone"},
    {"compare --trace @ --out @/o1", 2, "--trace"},
    {"train --data-dir @/idx-folder --out @/o1", 2,
     "idx-folder/train-images-idx3-ubyte.gz: is a folder"},
    {"run --record-trace @ --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "is a folder; expected a file name"},
    {"run --record-trace @/afile/t.jsonl --train-samples 256 --test-samples 64 --batch 8 "
     "--out @/o1",
     2, "afile: not a folder"},
    {"run --train-samples 256 --test-samples 64 --batch 8 --epochs 1 --out @/afile", 2,
     "afile' is not a folder"},
    {"compare --policies sync --train-samples 256 --test-samples 64 --batch 8 --out @/afile", 2,
     "is not a folder"},
    {"sweep --workers 2,4 --train-samples 256 --test-samples 64 --batch 8 --out @/afile", 2,
     "--out"},
    {"merge --out @/o1 @/afile", 2, "afile"},
    {"plot @/afile", 2, "afile"},
    /* ---- corrupt datasets (IDX files written by make_idx_dirs) ---- */
    {"train --data-dir @/idx-magic --out @/o1", 2,
     "idx-magic/train-images-idx3-ubyte.gz: not an IDX image file (magic 00000903"},
    {"train --data-dir @/idx-swapped --out @/o1", 2,
     "idx-swapped/train-labels-idx1-ubyte.gz: not an IDX label file"},
    {"train --data-dir @/idx-count --out @/o1", 2,
     "idx-count/train-labels-idx1-ubyte.gz: 63 labels, but"},
    {"train --data-dir @/idx-dims --out @/o1", 2,
     "idx-dims/train-images-idx3-ubyte.gz: implausible dimensions 64 x 0 x 28"},
    {"train --data-dir @/idx-label --out @/o1", 2,
     "idx-label/t10k-labels-idx1-ubyte.gz: label 10 of sample 5 is outside [0, 10)"},
    {"train --data-dir @/idx-trailing --out @/o1", 2,
     "idx-trailing/t10k-images-idx3-ubyte.gz: trailing data"},
    {"train --data-dir @/idx-testsize --out @/o1", 2,
     "idx-testsize/t10k-images-idx3-ubyte.gz: images are not the same size"},
    {"train --data-dir @/idx-empty --out @/o1", 2,
     "idx-empty/train-images-idx3-ubyte.gz: file is truncated (ended while reading the header)"},
    {"train --data-dir @/idx-nolabels --out @/o1", 2,
     "idx-nolabels/train-labels-idx1-ubyte.gz: cannot open"},
    {"train --data-dir @/idx-gzjunk --out @/o1", 2,
     "idx-gzjunk/t10k-images-idx3-ubyte.gz: corrupt"},
    {"train --data-dir @/idx-lying --out @/o1", 2,
     "idx-lying/train-images-idx3-ubyte.gz: file is truncated (ended while reading the pixels)"},
    {"run --data-dir @/idx-label --out @/o1", 2, "idx-label/t10k-labels-idx1-ubyte.gz"},
    /* ---- platform files ---- */
    {"run --platform @/notxml.xml --out @/o1", 2, "notxml.xml: SimGrid cannot load it"},
    {"run --platform @/nohosts.xml --out @/o1", 2,
     "nohosts.xml: SimGrid cannot load it: There is no host"},
    {"run --platform @/empty.xml --out @/o1", 2, "empty.xml"},
    {"run --platform @/noroute.xml --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "noroute.xml: no route from host 'a' to host 'b' (ranks 0 and 1)"},
    {"run --platform @/good.xml --hosts c,b,a,a --out @/o1", 2, "--hosts: 'a' is listed twice"},
    {"run --platform @/good.xml --hosts , --out @/o1", 2, "--hosts: expected host names"},
    {"run --platform @/good.xml --hosts a,b --workers 3 --out @/o1", 2,
     "--workers: 3, but --hosts lists 2 hosts"},
    {"run --platform @/good.xml --topology fat-tree --out @/o1", 2, "--topology: describes"},
    {"run --platform @/good.xml --gpu V100 --out @/o1", 2, "--gpu: describes"},
    /* ---- policy and compressor specs ---- */
    {"run --policy 'accordion:bogus=1' --out @/o1", 2, "accordion: unknown option 'bogus'"},
    {"run --policy 'cpsgd:period=' --out @/o1", 2, "option 'period' has an empty value"},
    {"run --policy 'cpsgd:period=4,period=8' --out @/o1", 2, "option 'period' given twice"},
    {"run --policy 'cpsgd:period' --out @/o1", 2, "option 'period' is not key=value"},
    {"run --policy 'cpsgd:period=2.5' --out @/o1", 2, "period=2.5: expected an integer"},
    {"run --policy 'accordion:decider=some' --out @/o1", 2, "decider=some: expected one of"},
    {"run --policy 'Sync' --out @/o1", 2, "--policy 'Sync': expected NAME"},
    {"run --policy 'static:level=1,' --out @/o1", 2, "trailing ','"},
    {"run --compressor 'topk:ef=2' --out @/o1", 2, "ef=2: expected a value in [0, 1]"},
    {"run --compressor 'powersgd:rank_change=maybe' --out @/o1", 2, "rank_change=maybe"},
    {"run --compressor 'topk:ef=1,ef=0' --out @/o1", 2, "option 'ef' given twice"},
    {"run --compressor ':ef=1' --out @/o1", 2, "--compressor ':ef=1'"},
    {"compare --policies 'sync,,static' --out @/o1", 2, "--policies 'sync,,static': empty item"},
    /* issue 49 item 27: the compressor after an '@' is the item's, not --compressor's */
    {"compare --policies \"./half$(printf '\\100')way.so,sync\" --out @/o1", 2,
     "--policies './half@way.so': a plugin's path is made of"},
    {"compare --policies \"sync$(printf '\\100')zzz,sync\" --out @/o1", 2,
     "--policies: unknown compressor 'zzz'"},
    {"compare --policies 'sync,a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z' --out @/o1", 2,
     "--policies: more than"},
    /* ---- traces (replay, compare --trace, sweep --trace) ---- */
    {"replay --out @/o1", 2, "--trace: replay needs the trace"},
    /* ---- seeds, and an --out that holds something already (nothing in it touched) ---- */
    {"compare --seed 3 --seeds 1,2 --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--seed: give --seeds or --seed, not both"},
    {"compare --seeds 1,2,1 --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "--seeds: 1 is listed twice"},
    {"compare --seeds '' --out @/o1", 2, "--seeds"},
    {"run --train-samples 256 --test-samples 64 --batch 8 --out @/nonempty", 2,
     "nonempty: the folder is not empty (earlier results?); choose a new folder, or add --force"},
    {"compare --train-samples 256 --test-samples 64 --batch 8 --out @/nonempty", 2,
     "nonempty: the folder is not empty"},
    {"replay --trace @/headonly.jsonl --out @/nonempty", 2, "nonempty: the folder is not empty"},
    {"sweep --workers 2,4 --train-samples 256 --test-samples 64 --batch 8 --out @/nonempty", 2,
     "nonempty: the folder is not empty"},
    {"sweep --workers 2,4 --train-samples 256 --test-samples 64 --batch 8 --force --resume "
     "--out @/o1",
     2, "--force: not with --resume"},
    {"replay --trace @/nonexistent.jsonl --out @/o1", 2, "nonexistent.jsonl"},
    {"replay --trace @/notjson.jsonl --out @/o1", 2, "notjson.jsonl:1:"},
    {"replay --trace @/badstep.jsonl --out @/o1", 2, "badstep.jsonl:2: "},
    {"replay --trace @/headonly.jsonl --out @/o1", 2, "headonly.jsonl: the trace has no step"},
    {"replay --trace @/empty.jsonl --out @/o1", 2, "empty.jsonl: empty trace"},
    {"replay --trace @/cut.jsonl.gz --out @/o1", 2, "cut.jsonl.gz"},
    {"sweep --trace @/notjson.jsonl --bandwidth 1Gbps,10Gbps --out @/o1", 2, "notjson.jsonl:1:"},
    /* ---- sweep, merge and plot ---- */
    {"sweep --shard 0/2 --out @/o1", 2, "--shard 0/2"},
    {"sweep --shard two --out @/o1", 2, "--shard two"},
    {"sweep --bandwidth '' --out @/o1", 2, "--bandwidth"},
    {"merge --out @/o1 @/nonexistent", 2, "nonexistent"},
    {"plot @ @", 2, "plot: expected one result folder"},
    /* ---- out-of-range values ---- */
    {"run --workers 100000", 2, "--workers"},
    {"run --eval-every -1", 2, "--eval-every"},
    {"run --compute-jitter 6", 2, "--compute-jitter"},
    {"run --slowdown 0.001", 2, "--slowdown"},
    {"compare --jobs 65", 2, "--jobs"},
    {"platform --bandwidth 0Gbps", 2, "--bandwidth: bandwidth must be positive"},
    {"platform --bandwidth=", 2, "--bandwidth"},
    {"platform --latency 1e400s", 2, "--latency: expected a duration"},
    {"platform --gpu-flops 0", 2, "--gpu-flops"},
    {"platform --topology fat-tree --leaf-size 0", 2, "--leaf-size"},
    {"train --lr-decay-factor 0", 2, "--lr-decay-factor"},
    /* workload profiles and the costs' flags */
    {"run --workload nosuch --out @/o1", 2, "unknown workload (the built-ins: bert-base"},
    {"run --workload @/neg.json --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "neg.json: layers[0] \"fc\": \"fwd_flops\" must be a number >= 0"},
    {"run --workload @/one.json --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "one.json: the small model has 2 matrix layers, more than the profile's 1"},
    {"run --workload @/missing.json --out @/o1", 2, "missing.json: No such file or directory"},
    {"run --workload @/tpu.json --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "tpu.json: measured on \"TPU\", not a GPU bellows knows"},
    {"run --overlap bogus --out @/o1", 2, "--overlap: expected one of none|ddp"},
    {"run --bucket-mb 0 --out @/o1", 2, "--bucket-mb"},
    {"run --timeline @/t.json --timeline-steps 5:2 --out @/o1", 2, "--timeline-steps: expected"},
    {"run --timeline @/nodir/t.json --train-samples 256 --test-samples 64 --batch 8 --out @/o1", 2,
     "nodir/t.json: cannot write into"},
    {"compare --timeline @/t.json --out @/o1", 2, "unknown flag '--timeline'"},
};

/* ---- corrupt datasets: small IDX folders, each with one thing wrong ---- */

/* The four files of a data folder; each folder spoils one. */
enum { TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS };
static const char *const IDX_NAMES[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};

typedef enum {
    SPOIL_NONE,
    SPOIL_MAGIC,    /* type byte 0x09 instead of 0x08 */
    SPOIL_SWAPPED,  /* a label file where the images go and vice versa */
    SPOIL_COUNT,    /* one label fewer than images */
    SPOIL_DIMS,     /* rows 0 */
    SPOIL_LABEL,    /* label 10 of 10 classes at sample 5 */
    SPOIL_TRAILING, /* bytes after the declared samples */
    SPOIL_SIZE,     /* test images 14 x 14, train 28 x 28 */
    SPOIL_EMPTY,    /* zero bytes */
    SPOIL_MISSING,  /* no file */
    SPOIL_GZJUNK,   /* a gzip header, then garbage */
    SPOIL_LYING,    /* the header promises 10^8 images; the file holds 64 */
    SPOIL_FOLDER,   /* a folder where the file goes */
} Spoil;

static void put_be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

/* Writes file k of a 64-train / 16-test set of 28 x 28 images into dir, spoilt as asked. */
static void write_idx(const char *dir, int k, Spoil spoil)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, IDX_NAMES[k]);
    if (spoil == SPOIL_MISSING) return;
    if (spoil == SPOIL_FOLDER) {
        assert_int_equal(mkdir(path, 0777), 0);
        return;
    }
    if (spoil == SPOIL_GZJUNK) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        static const char junk[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03this is not deflate";
        assert_int_equal(fwrite(junk, 1, sizeof junk - 1, f), sizeof junk - 1);
        fclose(f);
        return;
    }
    int images = k == TRAIN_IMAGES || k == TEST_IMAGES;
    if (spoil == SPOIL_SWAPPED) images = !images;
    uint32_t n = k < TEST_IMAGES ? 64 : 16, side = spoil == SPOIL_SIZE ? 14 : 28;
    if (spoil == SPOIL_COUNT) n--;
    size_t payload = images ? (size_t)n * side * side : n;
    unsigned char *b = calloc(16 + payload + 8, 1);
    assert_non_null(b);
    b[2] = spoil == SPOIL_MAGIC ? 0x09 : 0x08;
    b[3] = images ? 3 : 1;
    put_be32(b + 4, spoil == SPOIL_LYING ? 100000000u : n);
    size_t at = 8;
    if (images) {
        put_be32(b + 8, spoil == SPOIL_DIMS ? 0 : side);
        put_be32(b + 12, side);
        at = 16;
    }
    for (size_t i = 0; i < payload; i++) b[at + i] = (unsigned char)(images ? i * 7 : i % 10);
    if (spoil == SPOIL_LABEL) b[at + 5] = 10;
    size_t len = at + payload + (spoil == SPOIL_TRAILING ? 8 : 0);
    gzFile g = gzopen(path, "wb1");
    assert_non_null(g);
    if (spoil != SPOIL_EMPTY) assert_int_equal(gzwrite(g, b, (unsigned)len), (int)len);
    gzclose(g);
    free(b);
}

/* A data folder TMP/name whose file `which` is spoilt; the other three are fine. */
static void make_idx_dir(const char *name, int which, Spoil spoil)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", TMP, name);
    assert_int_equal(mkdir(dir, 0777), 0);
    for (int k = 0; k < 4; k++) write_idx(dir, k, k == which ? spoil : SPOIL_NONE);
    /* a lying image header needs a label file that agrees with it */
    if (spoil == SPOIL_LYING) write_idx(dir, which + 1, SPOIL_LYING);
}

static void make_idx_dirs(void)
{
    make_idx_dir("idx-good", 0, SPOIL_NONE);
    make_idx_dir("idx-magic", TRAIN_IMAGES, SPOIL_MAGIC);
    make_idx_dir("idx-swapped", TRAIN_LABELS, SPOIL_SWAPPED);
    make_idx_dir("idx-count", TRAIN_LABELS, SPOIL_COUNT);
    make_idx_dir("idx-dims", TRAIN_IMAGES, SPOIL_DIMS);
    make_idx_dir("idx-label", TEST_LABELS, SPOIL_LABEL);
    make_idx_dir("idx-trailing", TEST_IMAGES, SPOIL_TRAILING);
    make_idx_dir("idx-empty", TRAIN_IMAGES, SPOIL_EMPTY);
    make_idx_dir("idx-nolabels", TRAIN_LABELS, SPOIL_MISSING);
    make_idx_dir("idx-gzjunk", TEST_IMAGES, SPOIL_GZJUNK);
    make_idx_dir("idx-lying", TRAIN_IMAGES, SPOIL_LYING);
    make_idx_dir("idx-folder", TRAIN_IMAGES, SPOIL_FOLDER);
    /* both test files 14 x 14: consistent with each other, not with the training set */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/idx-testsize", TMP);
    assert_int_equal(mkdir(dir, 0777), 0);
    write_idx(dir, TRAIN_IMAGES, SPOIL_NONE);
    write_idx(dir, TRAIN_LABELS, SPOIL_NONE);
    write_idx(dir, TEST_IMAGES, SPOIL_SIZE);
    write_idx(dir, TEST_LABELS, SPOIL_NONE);
}

static void write_text(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", TMP, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#define TRACE_HEADER                                                                               \
    "{\"format\":\"bellows-trace\",\"version\":1,\"model\":\"mlp\",\"workers\":2,\"batch\":4,"     \
    "\"flops_per_sample\":10,\"layers\":[{\"name\":\"w\",\"rows\":2,\"cols\":3}]}\n"

/* Broken platforms and traces for the bad-invocation table. */
static void make_broken_inputs(void)
{
    write_text("notxml.xml", "hosts: a, b, c\n");
    write_text("nohosts.xml", "<?xml version='1.0'?>\n"
                              "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                              "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n"
                              "  </zone>\n</platform>\n");
    write_text("empty.xml", "");
    write_text("noroute.xml", "<?xml version='1.0'?>\n"
                              "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                              "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n"
                              "    <host id=\"a\" speed=\"1Tf\"/><host id=\"b\" speed=\"1Tf\"/>\n"
                              "  </zone>\n</platform>\n");
    write_text("notjson.jsonl", "this is not JSON\n");
    /* a folder with an earlier result in it: --out refuses it without --force */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/nonempty", TMP);
    assert_int_equal(mkdir(dir, 0777), 0);
    write_text("nonempty/compare.csv", "policy,folder\n");
    write_text("badstep.jsonl", TRACE_HEADER "{\"type\":\"step\",\"step\":0}\n");
    write_text("headonly.jsonl", TRACE_HEADER);
    write_text("empty.jsonl", "");
    /* a gzip trace cut in the middle of its stream */
    char path[128];
    snprintf(path, sizeof path, "%s/cut.jsonl.gz", TMP);
    gzFile g = gzopen(path, "wb1");
    assert_non_null(g);
    gzputs(g, TRACE_HEADER);
    for (int i = 0; i < 4000; i++)
        gzprintf(g,
                 "{\"type\":\"step\",\"step\":%d,\"epoch\":0,\"lr\":0.1,\"loss\":%.9f,"
                 "\"grad_norms\":[%.9f]}\n",
                 i, 1.0 / (i + 1), 1.0 / (i + 2));
    gzclose(g);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);
}

/* TMP/name (a static buffer). */
static const char *dir_of(const char *name)
{
    static char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", TMP, name);
    return dir;
}

/* The case's command line: a command that loads the data (train, run, compare, sweep) reads
 * smalldata.h's copy of its first samples, @/fmnist, unless the case names a --data-dir: 42 of
 * the cases load the data before they are refused, and the packaged set took 0.2 CPU s to read
 * in each (8.8 of the suite's 14.7; 0.02 s on the copy). What each refusal says and leaves is
 * the same on either (the cases that test the data folder name their own). */
static void case_args(char *out, size_t n, const char *args)
{
    static const char *const loads[] = {"train ", "run ", "compare ", "sweep "};
    char with[1024];
    snprintf(with, sizeof with, "%s", args);
    for (size_t k = 0; k < sizeof loads / sizeof *loads && !strstr(args, "--data-dir"); k++)
        if (strncmp(args, loads[k], strlen(loads[k])) == 0) {
            snprintf(with, sizeof with, "%s--data-dir @/fmnist %s", loads[k],
                     args + strlen(loads[k]));
            break;
        }
    clitest_expand_text(out, n, with);
}

/* A data folder whose training images are cut short, with the real labels and test set. */
static void make_corrupt_data_dir(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/corrupt && cd /usr/share/datasets/fashion-mnist && "
             "cp train-labels-idx1-ubyte.gz t10k-* %s/corrupt/ && "
             "gzip -dc train-images-idx3-ubyte.gz | head -c 1000000 | gzip -1 "
             "> %s/corrupt/train-images-idx3-ubyte.gz && echo x > %s/afile",
             TMP, TMP, TMP, TMP);
    assert_int_equal(system(cmd), 0);
    write_platforms();
    smalldata_write(dir_of("fmnist"), 2048, 500);
    make_idx_dirs();
    make_broken_inputs();
}

/* Every path under TMP but the captured stdout and stderr, sorted: what a run left behind. */
static char *listing(void)
{
    char cmd[512], path[128];
    snprintf(path, sizeof path, "%s/.listing", TMP);
    snprintf(cmd, sizeof cmd,
             "cd %s && find . -mindepth 1 ! -name stdout ! -name stderr ! -name .listing | "
             "LC_ALL=C sort >.listing",
             TMP);
    assert_int_equal(system(cmd), 0);
    return slurp(path, NULL);
}

static void test_bad_invocations_fail_cleanly(void **state)
{
    (void)state;
    make_corrupt_data_dir();
    char *before = listing();
    size_t n = sizeof BAD / sizeof *BAD, failures = 0;
    for (size_t i = 0; i < n; i++) {
        char args[1024];
        case_args(args, sizeof args, BAD[i].args);
        int st = run(args);
        char *err = captured("stderr");
        char *out = captured("stdout");
        int lines = count_lines(err);
        int ok = st == BAD[i].status && strstr(err, BAD[i].needle) &&
                 (BAD[i].args[0] == '\0' || (lines == 1 && strncmp(err, "bellows: ", 9) == 0));
        if (!ok) {
            print_error("bellows %s\n  exit %d (expected %d)\n  stderr: %s  expected to contain: "
                        "%s\n",
                        args, st, BAD[i].status, err, BAD[i].needle);
            failures++;
        }
        /* nothing created, nothing half-written, no temporary left in any folder */
        char *after = listing();
        if (strcmp(before, after) != 0) {
            print_error("bellows %s\n  left files behind; before:\n%s\nafter:\n%s\n", args, before,
                        after);
            failures++;
            free(before);
            before = listing(); /* judge the next cases on their own */
        }
        free(after);
        free(err);
        free(out);
    }
    free(before);
    if (failures) fail_msg("%zu of %zu bad invocations were not handled as expected", failures, n);
    /* the spoilt folders are spoilt by one thing only: the unspoilt one trains */
    char args[512];
    clitest_expand_text(
        args, sizeof args,
        "train --data-dir @/idx-good --epochs 1 --batch 8 --quiet --out @/idx-good-run");
    if (run(args) != 0) fail_msg("bellows %s failed on the unspoilt IDX folder", args);
    print_message("%zu bad invocations checked\n", n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_invocations_fail_cleanly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

# common.gp: settings shared by bellows' plot scripts (loaded by each of them).
set datafile separator ","
set grid
set key noenhanced
set style line 1 lw 1.5
# out(name, t): the output of terminal pass t (1: PNG, 2: SVG)
out(name, t) = dir."/".name.(t == 1 ? ".png" : ".svg")
# The bytes the plots draw: rank 0's (bytes_rank0: steps.csv's column 11, evals.csv's 7), or on
# islands the WAN's, every rank's bytes between two islands (wan_bytes, summary.json's running
# total: plots.c sets wan=1 and each run's columns sbcI and ebcI when every run has them).
wan = exists("wan") ? wan : 0
sbcol(i) = wan ? value(sprintf("sbc%d", i)) : 11
ebcol(i) = wan ? value(sprintf("ebc%d", i)) : 7
bwho = wan ? "WAN bytes (all ranks)" : "bytes sent by rank 0"

# common.gp: settings shared by bellows' plot scripts (loaded by each of them).
set datafile separator ","
set grid
set key noenhanced
set style line 1 lw 1.5
# out(name, t): the output of terminal pass t (1: PNG, 2: SVG)
out(name, t) = dir."/".name.(t == 1 ? ".png" : ".svg")

# sweep.gp: the speedup of each policy over the baseline as a heatmap over bandwidth x latency,
# one panel per policy, from a sweep folder's speedup_grid.dat (written by bellows sweep: one
# block per policy, rows "x_index y_index speedup bandwidth latency label"; a speedup of 0
# labelled "-" is a run that never reached the target). Called as
#   gnuplot -e "dir='DIR'; labels='sync static:level=1 ...'" sweep.gp
# Writes DIR/speedup_heatmap.png and DIR/speedup_heatmap.svg.
load scriptdir."/common.gp"
set datafile separator whitespace
set key off
n = words(labels)
cols = (n < 3) ? n : 3
rows = int((n + cols - 1) / cols)
f = dir."/speedup_grid.dat"
set grid noxtics noytics
set palette defined (0 "#b2182b", 1 "#f7f7f7", 2 "#2166ac")
set cbrange [0:2]
set cblabel "speedup over the baseline (time to target)"
set xlabel "NIC bandwidth"
set ylabel "NIC latency"
unset key

do for [t=1:2] {
  if (t == 1) {
    set terminal pngcairo size 420*cols,380*rows noenhanced font "sans,9"
    set output dir."/speedup_heatmap.png"
  } else {
    set terminal svg size 420*cols,380*rows noenhanced font "sans,9"
    set output dir."/speedup_heatmap.svg"
  }
  set multiplot layout rows,cols title "Speedup over the baseline to the target accuracy"
  do for [i=1:n] {
    set title word(labels,i)
    plot f index (i-1) using 1:2:3:xtic(4):ytic(5) with image, \
         f index (i-1) using 1:2:6 with labels
  }
  unset multiplot
}

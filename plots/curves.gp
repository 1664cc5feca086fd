# curves.gp: accuracy against simulated time (the target marked, and a panel zoomed on the
# region around it) and cumulative bytes against simulated time, one line per run, from the
# runs' evals.csv and steps.csv. Loaded by compare.gp, and called by bellows for each point of
# a sweep (plots/plots.c) as
#   gnuplot -e "dir='DIR'; n=2; run1='1-sync'; run2='2-...'; label1='sync'; ...; target=0.85" curves.gp
# Every run has its own colour, dash and point type, wider lines first so that a run drawn
# over another does not hide it, and the key sits outside the data.
# Writes DIR/accuracy_vs_time and DIR/bytes_vs_time, PNG and SVG.
load scriptdir."/common.gp"
run(i) = value(sprintf("run%d", i))
label(i) = value(sprintf("label%d", i))
ev(i) = dir."/".run(i)."/evals.csv"
st(i) = dir."/".run(i)."/steps.csv"
lwidth(i) = 1.2 + 1.6 * (n - i) / (n > 1 ? n - 1 : 1)
# the best accuracy of any run, for the zoomed panel: from target - 0.1 to just above it
amax = 0
do for [i=1:n] {
  stats ev(i) every ::1 using 6 nooutput
  if (STATS_records > 0 && STATS_max > amax) { amax = STATS_max }
}
zoom = target > 0 && amax > target - 0.1
zlo = target - 0.1
zhi = (amax > target ? amax : target) + 0.02
set key outside right top vertical Left reverse
do for [t=1:2] {
  if (t == 1) { set terminal pngcairo size 1100,(zoom ? 780 : 560) noenhanced font "sans,10" } \
  else { set terminal svg size 1100,(zoom ? 780 : 560) noenhanced font "sans,10" }

  set output out("accuracy_vs_time", t)
  if (target > 0) { set arrow 1 from graph 0, first target to graph 1, first target nohead dt 2 lw 1.5 lc rgb "#333333" front
                    set label 1 sprintf("target %.3f", target) at graph 0.01, first target offset 0,0.6 front }
  if (zoom) { set multiplot layout 2,1 title "Test accuracy against simulated time" }
  set title zoom ? "whole run" : "Test accuracy against simulated time"
  set xlabel "simulated time (s)"
  set ylabel "test accuracy"
  plot for [i=1:n] ev(i) every ::1 using 1:6 with linespoints lc i dt i pt i pointsize 0.6 lw lwidth(i) title label(i)
  if (zoom) {
    set title sprintf("zoomed: accuracy %.2f to %.2f", zlo, zhi)
    set yrange [zlo:zhi]
    plot for [i=1:n] ev(i) every ::1 using 1:6 with linespoints lc i dt i pt i pointsize 0.6 lw lwidth(i) title label(i)
    set autoscale y
    unset multiplot
  }
  unset arrow 1
  unset label 1

  if (t == 1) { set terminal pngcairo size 1100,560 noenhanced font "sans,10" } \
  else { set terminal svg size 1100,560 noenhanced font "sans,10" }
  set output out("bytes_vs_time", t)
  set title "Cumulative bytes sent by rank 0 against simulated time"
  set xlabel "simulated time (s)"
  set ylabel "bytes sent by rank 0 (MB)"
  plot for [i=1:n] st(i) every ::1 using 6:($11/1e6) with lines lc i dt i lw lwidth(i) title label(i)
}

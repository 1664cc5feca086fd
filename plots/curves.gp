# curves.gp: accuracy against simulated time (the target marked) and cumulative bytes against
# simulated time, one line per run, from the runs' evals.csv and steps.csv. Loaded by
# compare.gp, and called by bellows for each point of a sweep as
#   gnuplot -e "dir='DIR'; runs='1-sync 2-...'; labels='sync ...'; target=0.85" curves.gp
# Writes DIR/accuracy_vs_time and DIR/bytes_vs_time, PNG and SVG.
load scriptdir."/common.gp"
n = words(runs)
ev(i) = dir."/".word(runs,i)."/evals.csv"
st(i) = dir."/".word(runs,i)."/steps.csv"
do for [t=1:2] {
  if (t == 1) { set terminal pngcairo size 900,560 noenhanced font "sans,10" } \
  else { set terminal svg size 900,560 noenhanced font "sans,10" }

  set output out("accuracy_vs_time", t)
  set title "Test accuracy against simulated time"
  set xlabel "simulated time (s)"
  set ylabel "test accuracy"
  set key bottom right
  if (target > 0) { set arrow 1 from graph 0, first target to graph 1, first target nohead dt 2 lc rgb "#555555"
                    set label 1 sprintf("target %.3f", target) at graph 0.02, first target offset 0,0.7 }
  plot for [i=1:n] ev(i) every ::1 using 1:6 with linespoints pointsize 0.5 title word(labels,i)
  unset arrow 1
  unset label 1

  set output out("bytes_vs_time", t)
  set title "Cumulative bytes sent per worker against simulated time"
  set xlabel "simulated time (s)"
  set ylabel "bytes sent per worker (MB)"
  set key top left
  plot for [i=1:n] st(i) every ::1 using 6:($10/1e6) with lines lw 1.5 title word(labels,i)

}

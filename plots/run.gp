# run.gp: the plots of one run folder (bellows run), from its evals.csv and steps.csv. Called as
#   gnuplot -e "dir='DIR'; target=0.85; has_epochs=1" run.gp   (has_epochs: epochs.csv is there)
# Writes, as PNG and SVG: accuracy_vs_time (the target marked), bytes_vs_time (rank 0's, or on
# islands the WAN's: common.gp), time_per_step
# (compute / communication / waiting of each step) and schedule (the decided mean compression
# level of every step, its averaging period if the policy is periodic and its global batch if
# it changes, and, for policies that read gradient norms, epochs.csv's relative change of the
# epoch gradient norm that Accordion decides on; the panels aligned on the same steps).
load scriptdir."/common.gp"
ev = dir."/evals.csv"
st = dir."/steps.csv"
ep = dir."/epochs.csv"
do for [t=1:2] {
  if (t == 1) { set terminal pngcairo size 900,560 noenhanced font "sans,10" } \
  else { set terminal svg size 900,560 noenhanced font "sans,10" }

  set output out("accuracy_vs_time", t)
  set title (exists("accnote") && accnote ne "") ? "Test accuracy against simulated time [".accnote."]" : "Test accuracy against simulated time"
  set xlabel "simulated time (s)"
  set ylabel "test accuracy"
  set key bottom right
  if (target > 0) { set arrow 1 from graph 0, first target to graph 1, first target nohead dt 2 lc rgb "#555555"
                    set label 1 sprintf("target %.3f", target) at graph 0.02, first target offset 0,0.7 }
  plot ev every ::1 using 1:6 with linespoints pointsize 0.5 title "test accuracy"
  unset arrow 1
  unset label 1

  set output out("bytes_vs_time", t)
  set title "Cumulative ".bwho." against simulated time"
  set key top left
  stats st every ::1 using (column(sbcol(1))) nooutput
  if (STATS_max > 0) { set logscale y; set ylabel bwho." (MB, log scale)" } \
  else { set ylabel bwho." (MB)" }
  plot st every ::1 using 6:(column(sbcol(1)) > 0 || STATS_max <= 0 ? column(sbcol(1))/1e6 : NaN) with lines lw 1.5 title "bytes"
  unset logscale y

  set output out("time_per_step", t)
  set title "Simulated time of each step (rank 0)"
  set xlabel "step"
  set ylabel "simulated time (ms)"
  set key outside right top vertical   # beside the lines, never over them
  set offsets 0, 0, graph 0.05, graph 0.05
  plot st every ::1 using 1:($7*1e3) with lines title "compute", \
       "" every ::1 using 1:($8*1e3) with lines title "compression", \
       "" every ::1 using 1:($9*1e3) with lines title "communication", \
       "" every ::1 using 1:($10*1e3) with lines title "waiting"
  set offsets 0, 0, 0, 0
  set key inside
  set output out("schedule", t)
  set offsets 0, 0, graph 0.12, graph 0.12   # keep flat lines off the frame
  # the panels that say something: the level always, the averaging period if the policy is
  # periodic (a gradient policy's is 0), the global batch if it changes, the norm's change if
  # epochs.csv is there; each over the same steps, between the same margins
  stats st every ::1 using 1:15 nooutput
  set xrange [0:STATS_max_x]
  periodic = STATS_max_y > 0
  stats st every ::1 using 3 nooutput
  batches = STATS_max > STATS_min
  set lmargin at screen 0.1
  set rmargin at screen 0.96
  set multiplot layout (1 + periodic + batches + has_epochs),1 title "The schedule the policy chose"
  unset title
  set xlabel periodic || batches || has_epochs ? "" : "step"
  set ylabel "mean level (0: dense)"
  plot st every ::1 using 1:14 with steps notitle
  if (periodic) {
    set xlabel batches || has_epochs ? "" : "step"
    set ylabel "averaging period"
    plot st every ::1 using 1:15 with steps notitle
  }
  if (batches) {
    set xlabel has_epochs ? "" : "step"
    set ylabel "global batch"
    plot st every ::1 using 1:3 with steps notitle
  }
  if (has_epochs) {
    # the signal: relative change of the epoch's gradient norm from the epoch before, at the
    # step that ended the epoch (where Accordion decides)
    set xlabel "step"
    set ylabel "norm change"
    plot ep every ::2 using 2:4 with impulses lw 4 notitle, "" every ::2 using 2:4 with points pt 7 notitle
  }
  unset multiplot
  set autoscale x
  set lmargin -1
  set rmargin -1
  set offsets 0, 0, 0, 0
}

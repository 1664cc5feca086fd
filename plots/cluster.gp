# cluster.gp: the plots of a bellows cluster folder, from each job's evals.csv (DIR/jobs/NAME/,
# and DIR/alone/NAME/ when the jobs also ran alone) and DIR/links.csv. Called by bellows
# (plots/plots.c, from DIR/cluster.json) as
#   gnuplot -e "dir='DIR'; n=2; job1='a'; start1=0; ...; alone=1; nl=4; link1='up0_UP'; ..." cluster.gp
# A job's times in its files count from its start; here they are drawn on the cluster's clock
# (start + time), so a job that starts later starts later on the plot.
# Writes, as PNG and SVG: jobs_accuracy_vs_time (each job's test accuracy, solid; the same job
# alone on the same GPUs, dashed in its colour) and, when links.csv has links, links_utilisation
# (each busiest link's bytes over its rate, bin by bin, as a step line).
load scriptdir."/common.gp"
job(i) = value(sprintf("job%d", i))
start(i) = value(sprintf("start%d", i))
lnk(i) = value(sprintf("link%d", i))
ev(i) = dir."/jobs/".job(i)."/evals.csv"
al(i) = dir."/alone/".job(i)."/evals.csv"
lw(i) = 1.2 + 1.2 * (n - i) / (n > 1 ? n - 1 : 1)
set key outside right top vertical Left reverse
do for [t=1:2] {
  if (t == 1) { set terminal pngcairo size 1100,560 noenhanced font "sans,10" } \
  else { set terminal svg size 1100,560 noenhanced font "sans,10" }

  set output out("jobs_accuracy_vs_time", t)
  set title alone ? "Test accuracy of each job on the cluster's clock (dashed: the job alone on its GPUs)" \
                  : "Test accuracy of each job on the cluster's clock"
  set xlabel "simulated time (s), from the cluster's start"
  set ylabel "test accuracy"
  if (alone) {
    plot for [i=1:n] ev(i) every ::1 using ($1 + start(i)):6 with linespoints lc i pt i pointsize 0.6 lw lw(i) title job(i), \
         for [i=1:n] al(i) every ::1 using ($1 + start(i)):6 with lines lc i dt 2 lw 1.2 title job(i)." alone"
  } else {
    plot for [i=1:n] ev(i) every ::1 using ($1 + start(i)):6 with linespoints lc i pt i pointsize 0.6 lw lw(i) title job(i)
  }

  if (nl > 0) {
    set output out("links_utilisation", t)
    set title "Utilisation of the busiest links (links.csv: bytes over the link's rate, per bin)"
    set xlabel "simulated time (s), from the cluster's start"
    set ylabel "utilisation (% of the link's rate)"
    set yrange [0:105]
    plot for [i=1:nl] dir."/links.csv" every ::1 using (strcol(1) eq lnk(i) ? $3 : NaN):($6 * 100) with steps lc i dt i lw 1.5 title lnk(i)
    set autoscale y
  }
}

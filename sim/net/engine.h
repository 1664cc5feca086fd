/* engine.h: the SimGrid engine, once per process. bellows' defaults come first on SimGrid's
 * command line, so a user's own --cfg= and --log= options (passed through unchanged) override
 * them: the exact flow model (CM02 without cross-traffic or TCP window cap, against which
 * collective times match the closed-form costs), or SimGrid's TCP-like default model (LV08)
 * with network_model "tcp"; and a quiet log. */
#ifndef BELLOWS_ENGINE_H
#define BELLOWS_ENGINE_H

#include <simgrid/forward.h>

#include "status.h"
#include "cluster.h"

/* Initialises SimGrid. argv may hold --cfg=/--log= options for SimGrid (and nothing else);
 * network_model is "exact" or "tcp". Only the first call in a process does anything. */
int engine_init(int argc, char **argv, const char *network_model, BwError *err);

/* Loads the cluster's platform: generated into a temporary file (removed after loading), or
 * the user's c->platform_file with rank r on host c->hosts[r]; for the latter, sets
 * c->latency_s and c->bandwidth_Bps so that a route between ring neighbours costs
 * 2 latency_s + bytes / bandwidth_Bps at its worst, and gpu_flops to host 0's speed. */
int engine_load_cluster(Cluster *c, BwError *err);

/* Loads a user's platform file in a child process, so that a file SimGrid cannot read is a
 * usage error (naming the file and quoting SimGrid) rather than an abort. Returns its host
 * names in natural order (gpu2 before gpu10) in a malloc'd array of malloc'd strings. Call it
 * before engine_init. */
int engine_probe_platform(const char *path, char ***names, int *n, BwError *err);

/* Checks, in a child process, what SimGrid will simulate of the platform file for the hosts
 * names[0..n) (in rank order): every host's speed, and a route between every two hosts that a
 * collective may pair, each of its links with a bandwidth and latency in cluster.h's ranges
 * (CLUSTER_MIN_BANDWIDTH_BPS ...). A bad one is a usage error naming the host, or the link and
 * the two hosts, before anything is written, rather than SimGrid's abort (or a run of
 * infinite times) when the first computation or message meets it. Call it before engine_init. */
int engine_check_routes(const char *path, char *const *names, int n, BwError *err);

/* Tries the SimGrid options (--cfg=/--log=) and the network model in a child process on a
 * one-host platform, so that an option SimGrid refuses is a usage error quoting SimGrid rather
 * than an abort. Call it before engine_init. */
int engine_check_options(int argc, char **argv, const char *network_model, BwError *err);

/* Checks the --cfg= options among argv against those bellows vouches for (a usage error names
 * the option and lists the others): the TCP model's parameters, with network_model "tcp" and
 * messages simulated (analytic 0) only, and the actors' context factory. --log= options pass. */
int engine_check_cfg(int argc, char **argv, const char *network_model, int analytic, BwError *err);
/* "network/TCP-gamma, ...": the --cfg= options engine_check_cfg takes, for help and messages. */
void engine_vouched_options(char *buf, size_t n);

/* The host of rank r of the loaded cluster. */
sg_host_t engine_host(int rank);

/* A job of several on the loaded cluster (bellows cluster): its rank r sits on the cluster's
 * rank gpus[r] (engine_host). For a platform file, sets job's latency_s, bandwidth_Bps and
 * gpu_flops from the routes and hosts of its own ranks, as engine_load_cluster does for a run's;
 * a generated cluster's figures stay the flags'. */
void engine_measure_job(Cluster *job, const int *gpus);

#endif

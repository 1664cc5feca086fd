/* plan_stage.c: a stage at the end of a step plan, for every file of its builder (step_plan.c,
 * step_plan_hybrid.c, zeropp_plan.c, step_plan_units.c): a leaf of the call graph, so the
 * builder's rule files call it without calling back into step_plan.c. */
#include "exec_impl.h"

#include "xalloc.h"

PlanStage *plan_push_stage(StepPlan *p, StageKind kind)
{
    if (p->n_stages == p->cap_stages) {
        p->cap_stages = p->cap_stages ? 2 * p->cap_stages : 64;
        p->stage =
            bw_xrealloc_n(p->stage, (size_t)p->cap_stages, sizeof *p->stage, "the plan's stages");
    }
    PlanStage *s = &p->stage[p->n_stages++];
    *s = (PlanStage){.kind = kind, .comm = PLAN_COMM_RUN, .call_s = PLAN_NO_CALL};
    return s;
}

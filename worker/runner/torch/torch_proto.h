/* torch_proto.h — what the torch judge (torch_judge.c) and its Python
 * executor (crucible_torch.py, which repeats these numbers) share on top of
 * exec_proto.h (docs/torch.md, "Protocol").
 *
 * The executor is started, frozen and timed exactly as crucible-executor
 * is; its LOAD reads a JSON request from the start of its output arena and
 * (the reference) writes a JSON answer after it; its CALLs carry a
 * sub-command in argument 0 (a CR_EXEC_ARG_VALUE u32):
 *
 *   STAGE  args 1..n: the tensor inputs in the input arena, in get_inputs()
 *          order. They become the next call's arguments (on a GPU, copied to
 *          the device; the L2 flushed, unless the load request said
 *          "judge_flush": the judge's head flushes it). Its time is held to
 *          the reference's: work done there is counted (torch_judge.c note 4).
 *   RUN    calls forward() on them (with a value 1 in argument 1, the
 *          reference's torch.compile baseline's, made at LOAD); on a GPU between two events and a
 *          device-wide synchronise, the events' time to be written at
 *          CR_TORCH_EVT_OFF by FETCH (the executor's claim, which the judge
 *          accepts only inside its own wall-clock measure), and how many calls
 *          of its own kernels it made at CR_TORCH_OWN_OFF (its claim: only ever
 *          used against it). The timed command.
 *   FETCH  args 1..m: where each output goes in the output arena; the
 *          executor checks count and shape and copies them; first it writes
 *          the last GPU RUN's event and host times (CR_TORCH_EVT_OFF,
 *          CR_TORCH_HOST_OFF): nothing follows RUN's synchronise in RUN but
 *          its done. Timed, held to the reference's (torch_judge.c note 4).
 *
 * ctl->result after a command: 0, or one of CR_TORCH_R_* with ctl->msg
 * saying why (the executor's word: it can only hurt the candidate). */
#ifndef CR_TORCH_PROTO_H
#define CR_TORCH_PROTO_H

#define CR_TORCH_SPEC_BYTES 65536u /* the spec region at the start of every output arena */
#define CR_TORCH_REQ_OFF 0u        /* judge -> executor: load request, JSON, NUL-ended */
#define CR_TORCH_REQ_LEN 32768u
#define CR_TORCH_ANS_OFF 32768u    /* reference -> judge: load answer, JSON, NUL-ended */
#define CR_TORCH_ANS_LEN 32704u
#define CR_TORCH_EVT_OFF 65472u    /* executor -> judge: RUN's event time, us (double; < 0 none) */
#define CR_TORCH_OWN_OFF 65480u    /* executor -> judge: calls of the candidate's own kernels
                                      (load_inline functions, Triton launches) in the last RUN,
                                      u32; CR_TORCH_OWN_UNKNOWN when it cannot count them */
#define CR_TORCH_OWN_UNKNOWN 0xffffffffu
#define CR_TORCH_HOST_OFF 65488u   /* executor -> judge: the last GPU RUN's host time from its
                                      start event's record to its end event's, us (double):
                                      its word, which only sizes the judge's head (§4) */

enum { CR_TORCH_STAGE = 1, CR_TORCH_RUN = 2, CR_TORCH_FETCH = 3 };

enum {
    CR_TORCH_R_LOAD = -1,    /* the module did not import */
    CR_TORCH_R_INIT = -2,    /* get_init_inputs / the model's constructor / get_inputs failed */
    CR_TORCH_R_RUNTIME = -3, /* forward() (or staging) raised */
    CR_TORCH_R_OUTPUT = -4,  /* forward() returned the wrong count, type or shape */
};

#endif

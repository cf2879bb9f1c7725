export { mayMakeEvent } from "./event-records.ts";
export {
  DEFAULT_MAX_PENDING,
  DEFAULT_MAX_SESSIONS,
  type JoinCounts,
  OutcomeJoin,
  type OutcomeJoinOptions,
  type OutcomeJoinSnapshot,
} from "./join.ts";
export { type Decision, OUTCOMES, type Outcome, type StreamEvent, UnknownReason } from "./types.ts";

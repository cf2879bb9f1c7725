export { mayMakeEvent } from "./event-records.ts";
export {
  DEFAULT_MAX_PENDING,
  DEFAULT_MAX_SESSIONS,
  type JoinCounts,
  type JoinWatch,
  OutcomeJoin,
  type OutcomeJoinOptions,
  type OutcomeJoinSnapshot,
} from "./join.ts";
export { type EdgeReplay, mergeRange, RangeJoin, type RangeJoinResult, Route } from "./range.ts";
export { type Decision, OUTCOMES, type Outcome, type StreamEvent, UnknownReason } from "./types.ts";

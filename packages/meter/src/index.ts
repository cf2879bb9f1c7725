export {
  DEFAULT_TOP_N,
  type LiveBreakdown,
  LiveMeter,
  type LiveMeterOptions,
  type LiveVolume,
  type SinkStats,
  type SnapshotOptions,
  type SyslogStats,
  type WindowName,
  type WindowStats,
} from "./live.ts";
export { MIN_PROJECTION_SECONDS, type Projection, projectVolume } from "./projection.ts";
export {
  type Breakdown,
  type BreakdownState,
  type Tally,
  type VolumeReport,
  VolumeTally,
  type VolumeTallyState,
} from "./volume.ts";

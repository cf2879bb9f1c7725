export { type Breakdown, type Tally, type VolumeReport, VolumeTally } from "./volume.ts";

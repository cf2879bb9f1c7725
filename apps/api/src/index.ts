export { type ApiOptions, buildApi } from "./app.ts";
export {
  ApiError,
  type ApiErrorBody,
  type ApiErrorConstructor,
  AUDITPIPE_ERR_BAD_LISTEN,
  AUDITPIPE_ERR_BAD_REQUEST,
  AUDITPIPE_ERR_INSECURE_LISTEN,
  AUDITPIPE_ERR_INTERNAL,
  AUDITPIPE_ERR_LISTEN_FAILED,
  AUDITPIPE_ERR_METHOD_NOT_ALLOWED,
  AUDITPIPE_ERR_NOT_FOUND,
  AUDITPIPE_ERR_UNAUTHORIZED,
  createError,
} from "./errors.ts";
export { type ApiLimits, DEFAULT_API_LIMITS } from "./limits.ts";
export { checkListenSecurity, DEFAULT_LISTEN, isLoopback, listenApi, parseListenAddress } from "./listen.ts";
export {
  type AdviceDeps,
  AUDITPIPE_ERR_NO_ADVICE,
  adviceSchema,
  registerAdviceRoutes,
} from "./routes-advice.ts";
export { AUDITPIPE_ERR_NO_SAMPLE, type EstimatorDeps, registerEstimateRoutes } from "./routes-estimate.ts";

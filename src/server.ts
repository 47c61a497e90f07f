/**
 * svc embedded in another program (`import { AppLive, AppConfigFromEnv } from "svc/server"`): the whole
 * service as a layer, or its parts. The client is the package's main entry (src/index.ts).
 */
export { Api } from "./Api.js"
export { AppLive, ServicesLive } from "./App.js"
export { RoutesLive } from "./Http.js"
export { AppConfig, type AppConfigShape, layer as AppConfigFromEnv } from "./kernel/config/AppConfig.js"

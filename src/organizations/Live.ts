/** The organizations area: its service over its repository (provided here only). */
import { Layer } from "effect"
import { Organizations } from "./Organizations.js"
import { OrganizationsRepo } from "./Repo.js"

export const OrganizationsLive = Organizations.layer.pipe(Layer.provide(OrganizationsRepo.layer))

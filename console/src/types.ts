/**
 * The API's shapes, taken as types from the server's own schemas (src/**): nothing of them reaches
 * the bundle, and a change of a DTO is a type error here.
 */
import type { Wire } from "../../src/client/Wire.js"
import type { ApiKeyDto, CreatedApiKey } from "../../src/identity/Api.js"
import type { AcceptedChange } from "../../src/kernel/http/Dto.js"
import type { CreateMachineRequest, MachineDto, MachineList } from "../../src/machines/Api.js"
import type { OperationDto, OperationList } from "../../src/operations/Api.js"
import type { InvitationDto, MeDto, MemberDto } from "../../src/organizations/Api.js"
import type { TerminalTicket } from "../../src/terminals/Api.js"

export type Me = typeof MeDto.Type
export type Role = Me["organizations"][number]["role"]
export type Machine = MachineDto
export type MachinePage = typeof MachineList.Type
/** The body a client sends: fields the server defaults may be left out. */
export type CreateMachine = Wire<typeof CreateMachineRequest.Type>
export type Accepted = AcceptedChange
export type Operation = OperationDto
export type OperationPage = typeof OperationList.Type
export type ApiKey = ApiKeyDto
export type NewApiKey = typeof CreatedApiKey.Type
export type Member = typeof MemberDto.Type
export type Invitation = typeof InvitationDto.Type
export type Ticket = typeof TerminalTicket.Type

import type { EnvironmentDto } from "../../src/environments/Api.js"
import type { Roles } from "../../src/kernel/domain/Access.js"
import type { SnapshotDto } from "../../src/snapshots/Api.js"

export type Environment = typeof EnvironmentDto.Type
export type Snapshot = SnapshotDto
export type RoleLists = typeof Roles

import type { WebhookDeliveryDto, WebhookDto, WebhookSecretDto } from "../../src/webhooks/Api.js"

export type Webhook = typeof WebhookDto.Type
export type WebhookSecret = typeof WebhookSecretDto.Type
export type WebhookDelivery = typeof WebhookDeliveryDto.Type

import type {
  AgentConversationDto,
  AgentConversationListDto,
  AgentInputAccepted,
  AgentTurnDto,
  ProviderModelsDto
} from "../../src/agents/Api.js"
import type { AgentEvent as AgentEventSchema } from "../../src/agents/providers/Schemas.js"

export type AgentTurn = AgentTurnDto
export type AgentEvent = typeof AgentEventSchema.Type
export type Conversation = AgentConversationDto
export type ConversationPage = typeof AgentConversationListDto.Type
export type InputAccepted = AgentInputAccepted
export type ProviderModels = ProviderModelsDto

import type { NotificationPreferencesDto } from "../../src/alerts/Api.js"
import type { PortToken as PortTokenDto } from "../../src/ports/Api.js"

export type AlertPreferences = typeof NotificationPreferencesDto.Type
export type PortToken = typeof PortTokenDto.Type

import type { AutoRefillDto, BillingDto, InvoicePreviewDto, UsageDto } from "../../src/billing/Api.js"

export type Billing = typeof BillingDto.Type
export type AutoRefill = typeof AutoRefillDto.Type
export type InvoicePreview = typeof InvoicePreviewDto.Type
export type Usage = typeof UsageDto.Type

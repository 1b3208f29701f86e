/**
 * The store contract, the one module importers take it from: every type and value
 * of the durable store behind the gateway, re-exported from its parts in
 * store/contract/ (one file per part: docs/architecture.md, "The store's parts").
 * Import from here, not from a part's file, so a type that moves between parts
 * moves no importer. The parts import nothing outside store/contract/.
 */
export type {
  AdminStore,
  CallbackView,
  DeliveryView,
  ListCallbacksOptions,
  ListDeliveriesOptions,
  ListRunsOptions,
  RedeliverResult,
  RetryableRuns,
  RetryableRunsOptions,
  RunListView,
  RunPage,
  RunSummaryView,
  StoredRun,
} from './contract/admin.js';
export {
  ALERT_EVENTS,
  type AlertCounts,
  type AlertEvent,
  type AlertOutcome,
  type AlertSummaryText,
  type NewAlert,
} from './contract/alerts.js';
export {
  BUDGET_WINDOW_MS,
  BUDGET_WINDOWS,
  type BudgetStore,
  type BudgetWindow,
  type SpendAmount,
  type SpendCounter,
} from './contract/budgets.js';
export type { CallbackAttempt, CallbackItem, CallbackOutboxStore } from './contract/callbacks.js';
export type { CommittedListener, CommittedSignal, WorkKind } from './contract/committed.js';
export type {
  AcceptResult,
  Action,
  Committed,
  EventView,
  IdempotencyClaim,
  ListEventsOptions,
  RunView,
  StoredAnswer,
} from './contract/ingress.js';
export type { AddressLock, LedgerVerdict, LockoutLedger, LockoutPolicy } from './contract/lockouts.js';
export type { DeliveryOutboxStore, OutboxItem } from './contract/outbox.js';
export type { ReplicaStore } from './contract/replicas.js';
export type {
  ClaimedRun,
  ClaimHold,
  ClaimRequest,
  CompletionOutcome,
  RunCompletion,
  RunQueueStore,
} from './contract/runs.js';
export type { HeartbeatRecord, HeartbeatView, PendingEvent, SessionStore } from './contract/sessions.js';
export type {
  ApprovalDecision,
  DecideResult,
  ModelStep,
  RunStep,
  RunStepsStore,
  StepsStore,
  StepToolCall,
  ToolStep,
  WaitingFor,
  WaitOutcome,
} from './contract/steps.js';
export {
  type PruneBatch,
  type PruneKind,
  type Store,
  type StoreCounts,
  StoreUnavailableError,
} from './contract/store.js';
export {
  type RunUsage,
  type TokenUsage,
  USAGE_BUCKET_MS,
  USAGE_BUCKETS,
  USAGE_GROUPINGS,
  type UsageBucket,
  type UsageGroup,
  type UsageGrouping,
  type UsageSummaryOptions,
  type UsageView,
} from './contract/usage.js';
export type {
  Attachment,
  AttachmentInfo,
  CallbackStatus,
  DeliveryRecord,
  DeliveryRoute,
  DeliveryStatus,
  EventStatus,
  NewEvent,
  NewRun,
  RunStatus,
  TranscriptEntry,
  WakeMode,
} from './contract/values.js';

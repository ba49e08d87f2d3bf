/**
 * Row mapping both backends share: session, checkpoint and recall rows have the same columns in
 * every schema (message rows differ in how text and event JSON are stored, so each backend maps those).
 */
import type { ShadowCheckpoint, ShadowMessage, ShadowRecall, ShadowSession } from './types.ts'

export type Row = Record<string, unknown>

/** A message row, given its text and event JSON as the backend decoded them from its storage. */
export function messageOf(row: Row, text: string, eventJson: string): ShadowMessage {
  return {
    sessionId: row['session_id'] as string,
    seq: row['seq'] as number,
    shadowId: row['shadow_id'] as string,
    eventType: row['event_type'] as ShadowMessage['eventType'],
    role: row['role'] as ShadowMessage['role'],
    sourceKind: row['source_kind'] as string,
    turn: row['turn'] as number | null,
    step: row['step'] as number | null,
    toolName: row['tool_name'] as string | null,
    callId: row['call_id'] as string | null,
    time: row['time'] as number,
    tokens: row['tokens'] as number,
    hash: row['hash'] as string,
    eventJson,
    text,
    elidedBy: row['elided_by'] as string | null,
    expiredAt: row['expired_at'] as number | null,
  }
}

export function toSession(row: Row): ShadowSession {
  return {
    sessionId: row['session_id'] as string,
    tag: row['tag'] as string,
    parentSessionId: row['parent_session_id'] as string | null,
    forkSeq: row['fork_seq'] as number | null,
    workspace: row['workspace'] as string | null,
    createdAt: row['created_at'] as number | null,
    messageCount: row['message_count'] as number,
    lastSeq: row['last_seq'] as number,
    firstTime: row['first_time'] as number | null,
    lastTime: row['last_time'] as number | null,
  }
}

export function toCheckpoint(row: Row): ShadowCheckpoint {
  return {
    checkpointId: row['checkpoint_id'] as string,
    sessionId: row['session_id'] as string,
    engine: row['engine'] as string,
    status: row['status'] as ShadowCheckpoint['status'],
    trigger: row['trigger'] as string | null,
    startSeq: row['start_seq'] as number | null,
    summarySeq: row['summary_seq'] as number | null,
    replaceSeq: row['replace_seq'] as number | null,
    shadowedSeqs: JSON.parse(row['shadowed_seqs'] as string) as number[],
    firstSeq: row['first_seq'] as number | null,
    lastSeq: row['last_seq'] as number | null,
    firstShadowId: row['first_shadow_id'] as string | null,
    lastShadowId: row['last_shadow_id'] as string | null,
    timeFrom: row['time_from'] as number | null,
    timeTo: row['time_to'] as number | null,
    messageCount: row['message_count'] as number,
    shadowedTokens: row['shadowed_tokens'] as number | null,
    summaryTokens: row['summary_tokens'] as number | null,
    footer: row['footer'] as string | null,
    error: row['error'] as string | null,
    createdAt: row['created_at'] as number,
    expiredAt: row['expired_at'] as number | null,
    expiredRows: row['expired_rows'] as number,
  }
}

export function toRecall(row: Row): ShadowRecall {
  return {
    recallId: row['id'] as number,
    sessionId: row['session_id'] as string,
    seq: row['seq'] as number | null,
    time: row['time'] as number,
    kind: row['kind'] as ShadowRecall['kind'],
    query: row['query'] as string | null,
    shadowIds: JSON.parse(row['shadow_ids'] as string) as string[],
    checkpointIds: JSON.parse(row['checkpoint_ids'] as string) as string[],
  }
}

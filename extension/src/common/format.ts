// How things read in the chat: tool titles, a call's one-line target, durations, token counts, diff stats.
import type { Usage } from '../protocol';

const TOOL_TITLES: Record<string, string> = {
  list_files: 'List files',
  search_files: 'Search',
  read_file: 'Read',
  write_file: 'Write',
  edit_file: 'Edit',
  run_command: 'Run',
  web_fetch: 'Fetch',
  web_search: 'Web search',
  ask_user: 'Question',
  task: 'Sub-agent',
  diagnostics: 'Problems',
  find_symbol: 'Symbols',
  find_definition: 'Definition',
  find_references: 'References',
};

export function toolTitle(name: string): string {
  return TOOL_TITLES[name] ?? (name || 'Tool');
}

/** The argument that says what a call is about (its path, command, pattern, URL or query), for the card's header. */
export function toolTarget(name: string, args: Record<string, unknown> | null, argsText: string): string {
  const pick = (key: string) => (args && typeof args[key] === 'string' ? (args[key] as string) : undefined);
  let target: string | undefined;
  switch (name) {
    case 'run_command':
      target = pick('command');
      break;
    case 'search_files':
      target = pick('pattern');
      break;
    case 'find_definition':
    case 'find_references':
      target = pick('symbol');
      break;
    default:
      target = pick('path') ?? pick('command') ?? pick('pattern');
  }
  if (target === undefined && args) target = Object.values(args).find((v): v is string => typeof v === 'string');
  if (target === undefined) {
    // Arguments still streaming: show the path or command as soon as its string is complete.
    const m = /"(?:path|command|pattern|url|query)"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(argsText);
    if (m) target = m[1].replace(/\\(.)/g, '$1');
  }
  const oneLine = (target ?? '').replace(/\s+/g, ' ').trim();
  return oneLine.length > 80 ? `${oneLine.slice(0, 79)}…` : oneLine;
}

export function formatDuration(ms: number | null): string {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatTokens(n: number): string {
  return n < 1000 ? String(n) : n < 100_000 ? `${(n / 1000).toFixed(1)}k` : `${Math.round(n / 1000)}k`;
}

/** The context meter: "38% of 32k" (≈ when the figure is Sunwell's estimate) and its tooltip. */
export function formatContext(meter: { used: number; window: number; estimated: boolean } | null | undefined):
  { text: string; title: string; percent: number } | null {
  if (!meter || meter.window <= 0) return null;
  const percent = Math.min(100, Math.round((meter.used / meter.window) * 100));
  const about = meter.estimated ? '≈' : '';
  return {
    text: `${about}${percent}% of ${formatTokens(meter.window)}`,
    title: `Context: ${about}${formatTokens(meter.used)} of ${formatTokens(meter.window)} tokens used`
      + `${meter.estimated ? ' (estimated: the server reported no usable count)' : ''}. ::compact makes room; ::context shows what is in it.`,
    percent,
  };
}

/** Tokens as a sidecar reports them; one older than prompt caching sends no cache figures. */
type Tokens = Pick<Usage, 'inputTokens' | 'outputTokens'> & Partial<Pick<Usage, 'cacheReadTokens' | 'cacheWriteTokens'>>;

/** A turn's tokens: "12.3k in (10.1k cached) · 456 out", the cached part being of the input. */
export function formatUsage(usage: (Tokens & { estimated?: boolean }) | null): string {
  if (!usage) return '';
  const about = usage.estimated ? '≈' : '';
  const cached = usage.cacheReadTokens ? ` (${formatTokens(usage.cacheReadTokens)} cached)` : '';
  return `${about}${formatTokens(usage.inputTokens)} in${cached} · ${about}${formatTokens(usage.outputTokens)} out`;
}

/** What the provider's prompt cache did with the input: "9,000 read from cache, 2,000 written to it"; '' if nothing. */
export function cacheNote(usage: Tokens | null | undefined): string {
  const read = usage?.cacheReadTokens ?? 0;
  const written = usage?.cacheWriteTokens ?? 0;
  return [read ? `${read.toLocaleString('en')} read from cache` : '',
    written ? `${written.toLocaleString('en')} written to ${read ? 'it' : 'the cache'}` : ''].filter(Boolean).join(', ');
}

/** `$0.0123` (a turn of a cheap model costs fractions of a cent); '' when the model has no price. */
export function formatCost(cost: number | null | undefined): string {
  if (cost === null || cost === undefined) return '';
  return cost < 1 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`;
}

/** The footer's session figure and its tooltip: every turn's tokens, and what they cost at the model's price. */
export function formatSessionUsage(usage: Tokens & { estimated: boolean; cost?: number | null;
  model: string | null; turns?: unknown[] } | null): { text: string; title: string } | null {
  if (!usage || !usage.turns?.length) return null;
  const about = usage.estimated ? '≈' : '';
  const tokens = `${about}${formatTokens(usage.inputTokens + usage.outputTokens)} tokens`;
  const cost = formatCost(usage.cost);
  const turns = usage.turns.length;
  const cached = cacheNote(usage);
  return {
    text: cost ? `${tokens} · ${cost}` : tokens,
    title: `This session: ${about}${usage.inputTokens.toLocaleString('en')} in${cached ? ` (${cached})` : ''}, `
      + `${about}${usage.outputTokens.toLocaleString('en')} out over `
      + `${turns} turn${turns === 1 ? '' : 's'}${usage.estimated ? ' (estimated where the server reported no usage)' : ''}`
      + (cost ? `; ${cost} at ${usage.model}'s price (the \`prices\` config)` : usage.model ? `; no price for ${usage.model}` : ''),
  };
}

/** The setting that holds a model's endpoint, from its provider (docs/config.md "Model strings"). */
export function endpointSetting(model: string | null): string {
  const provider = model?.includes(':') ? model.slice(0, model.indexOf(':')) : 'openai';
  return { anthropic: 'sunwell.anthropicBaseUrl', ollama: 'sunwell.ollamaHost', 'openai-compatible': 'sunwell.baseUrl' }[provider]
    ?? 'sunwell.openaiBaseUrl';
}

/** The endpoint a failed turn could not reach, from the engine's error ("cannot reach URL: …"). */
export function unreachableEndpoint(error: string | null): string | null {
  return /cannot reach (\S+?):? /i.exec(error ?? '')?.[1] ?? null;
}

/** A failure an API key fixes: the provider refused the key, or none was set. */
export function needsApiKey(error: string | null): boolean {
  return /\b401\b|api[ _-]?key|unauthori[sz]ed|authentication/i.test(error ?? '');
}

/** Lines added and removed between two texts (a line-multiset count: enough for a card's summary). */
export function diffStat(before: string | null, after: string): { added: number; removed: number } {
  const lines = (t: string) => (t === '' ? [] : t.replace(/\n$/, '').split('\n'));
  const counts = new Map<string, number>();
  for (const line of lines(before ?? '')) counts.set(line, (counts.get(line) ?? 0) + 1);
  let added = 0;
  for (const line of lines(after)) {
    const n = counts.get(line) ?? 0;
    if (n > 0) counts.set(line, n - 1);
    else added++;
  }
  let removed = 0;
  for (const n of counts.values()) removed += n;
  return { added, removed };
}

export function relativeTime(iso: string, now: number = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

// The chat input's `::commands` (docs/cli.md "Chat commands"): a line that starts with `::name` is a command.
// Pure helpers for the highlighting overlay and the completion list. The grammar is the engine's
// (commands_spec.py), read from commands.generated.ts.
import { COMMAND_NAME, PROMPT_NAME, type CommandName } from '../commands.generated';
import type { CommandInfo } from '../protocol';

export interface Segment {
  text: string;
  command: boolean;
}

// `::` then a letter, at the start of a line (after optional blanks): `a::b`, `std::vector`, `::` and `::9x` are
// not commands, like in the grammar.
const COMMAND = new RegExp(`^([ \\t]*)(::${COMMAND_NAME})`, 'gm');
const COMMAND_LINE = new RegExp(`^\\s*::(?:${COMMAND_NAME}|${PROMPT_NAME})(?:\\s+[\\s\\S]*)?$`);

/** Whether the sidecar takes the whole line as a `::command` (commands_spec.py `parse_command`), not a turn. */
export function isCommandLine(text: string): boolean {
  return COMMAND_LINE.test(text.replace(/[\r\n]+$/, ''));
}

/** The line that runs the command `name` with `args` (a name the engine does not have does not compile). */
export function commandLine(name: CommandName, args = ''): string {
  return args ? `::${name} ${args}` : `::${name}`;
}

/** The input split into plain text and command names, for the overlay that highlights them. */
export function segments(text: string): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (const m of text.matchAll(COMMAND)) {
    const start = (m.index ?? 0) + m[1].length;
    if (start > last) out.push({ text: text.slice(last, start), command: false });
    out.push({ text: m[2], command: true });
    last = start + m[2].length;
  }
  if (last < text.length) out.push({ text: text.slice(last), command: false });
  return out;
}

export interface CompletionContext {
  /** What was typed after `::`. */
  prefix: string;
  /** The range of `::prefix` in the text, to replace when a completion is accepted. */
  start: number;
  end: number;
}

/** When the caret is in a `::name` at the start of its line, what to complete. */
export function completionContext(text: string, caret: number): CompletionContext | null {
  const lineStart = text.lastIndexOf('\n', caret - 1) + 1;
  const before = text.slice(lineStart, caret);
  const m = /^[ \t]*::([\w-]*)$/.exec(before);
  if (!m) return null;
  const start = caret - m[1].length - 2;
  let end = caret;
  while (end < text.length && /[\w-]/.test(text[end])) end++;
  return { prefix: m[1], start, end };
}

/** Commands whose name starts with the prefix, then those that contain it. */
export function matchCommands(commands: CommandInfo[], prefix: string): CommandInfo[] {
  const p = prefix.toLowerCase();
  const name = (c: CommandInfo) => c.name.replace(/^::/, '').toLowerCase();
  const starts = commands.filter((c) => name(c).startsWith(p));
  const contains = commands.filter((c) => !name(c).startsWith(p) && name(c).includes(p));
  return [...starts, ...contains];
}

/** Whether what was typed after `::` is already the whole name of one of the commands offered. */
export function isCompleteCommand(commands: CommandInfo[], prefix: string): boolean {
  const p = prefix.toLowerCase();
  return p !== '' && commands.some((c) => c.name.replace(/^::/, '').toLowerCase() === p);
}

/** The text after accepting a completion, and where the caret goes. */
export function applyCompletion(text: string, ctx: CompletionContext, command: CommandInfo): { text: string; caret: number } {
  const insert = `::${command.name.replace(/^::/, '')} `;
  const rest = text.slice(ctx.end).replace(/^ /, '');
  return { text: text.slice(0, ctx.start) + insert + rest, caret: ctx.start + insert.length };
}

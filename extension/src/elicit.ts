// `sunwell/elicit`: an MCP server asks the user during a call. A form built from the server's schema, one native
// input per field: the server's name in every title, its question as its own words, no field filled in for the user
// (a server's default is never offered), Escape cancels. The sidecar checks the answer against the schema.
import * as vscode from 'vscode';
import { RequestBroker } from './common/requestBroker';
import type { ElicitParams, ElicitResult } from './protocol';

/** What of the server's schema the form reads (a flat object of strings, numbers, booleans and enums). */
interface FormSchema {
  properties?: Record<string, FieldSchema>;
  required?: string[];
}

interface FieldSchema {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
}

export type ElicitAnswer = ElicitResult;

/** An MCP server's question, keyed like every request to the user: `sunwell/elicit` carries no id of its own. */
interface Elicitation {
  id: string;
  params: ElicitParams;
}

/** Pending elicitations, in the broker every request to the user goes through: the form answers, and a request the
 *  sidecar cancels (or a sidecar that is gone) ends as `cancel`. */
export class Elicitations extends RequestBroker<Elicitation, ElicitAnswer> {
  private count = 0;

  constructor() {
    super({ idOf: (elicitation) => elicitation.id, unanswered: { action: 'cancel' } });
  }

  ask(params: ElicitParams, token?: vscode.CancellationToken): Promise<ElicitAnswer> {
    const elicitation = { id: `elicit-${++this.count}`, params };
    const answer = this.request(elicitation, token);
    void elicitForm(params, token).then((form) => this.answer(elicitation.id, form), () => this.expire(elicitation.id));
    return answer;
  }
}

export async function elicitForm(params: ElicitParams, token?: vscode.CancellationToken): Promise<ElicitAnswer> {
  const title = `MCP server ${params.server} asks`;
  const choice = await vscode.window.showQuickPick(['Answer', 'Decline'], {
    title, placeHolder: `"${params.message}" (the server's words, not Sunwell's)`, ignoreFocusOut: true,
  }, token);
  if (choice === undefined) return { action: 'cancel' };
  if (choice === 'Decline') return { action: 'decline' };
  const schema = params.schema as FormSchema;
  const required = new Set(schema.required ?? []);
  const content: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const value = await askField(title, name, field, required.has(name), token);
    if (value === CANCELLED) return { action: 'cancel' };
    if (value !== undefined) content[name] = value;
  }
  return { action: 'accept', content };
}

const CANCELLED = Symbol('cancelled');

async function askField(title: string, name: string, field: FieldSchema, required: boolean,
  token?: vscode.CancellationToken): Promise<unknown> {
  const prompt = `${field.title ?? name}${field.description ? ` — ${field.description}` : ''}${required ? '' : ' (optional)'}`;
  if (field.enum || field.type === 'boolean') {
    const options = (field.enum ?? [true, false]).map((v) => ({ label: String(v), value: v }));
    const picked = await vscode.window.showQuickPick(required ? options : [...options, { label: '(skip)', value: undefined }],
      { title, placeHolder: prompt, ignoreFocusOut: true }, token);
    return picked === undefined ? CANCELLED : picked.value;
  }
  const numeric = field.type === 'integer' || field.type === 'number';
  const text = await vscode.window.showInputBox({
    title, prompt, ignoreFocusOut: true,
    validateInput: (v) => (v === '' ? (required ? 'required' : undefined)
      : numeric && !Number.isFinite(Number(v)) ? `a ${field.type}` : undefined),
  }, token);
  if (text === undefined) return CANCELLED;
  if (text === '') return undefined;
  return numeric ? Number(text) : text;
}

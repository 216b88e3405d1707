// The chat input: a textarea over a mirror that highlights `::commands` as they are typed, a completion list fed
// by `sunwell/commands`, `@` mentions picked from the same list and shown as removable chips, Enter to send and
// Shift+Enter for a new line. Images pasted or dropped wait above it (imageTray.ts).
import { applyCompletion, completionContext, isCompleteCommand, matchCommands, segments, type CompletionContext } from '../common/commandline';
import { chipText, matchMentions, mentionContext, removeMentionQuery, type MentionContext, type MentionRef, type ResourceRef } from '../common/mentions';
import { isImageName, type ImageUpload } from '../common/images';
import type { CommandInfo } from '../protocol';
import { h, icon } from './dom';
import { ImageTray } from './imageTray';

export interface InputCallbacks {
  send(text: string, mentions: MentionRef[], images: ImageUpload[]): void;
  /** The workspace's files for the `@` picker (empty until the host sent them; `needFiles` asks). */
  files(): readonly string[];
  /** The MCP servers' resources for the `@` picker (`@SERVER:URI`). */
  resources?(): readonly ResourceRef[];
  needFiles(): void;
  stop(): void;
  changed(text: string): void;
  commands(): CommandInfo[];
  busy(): boolean;
  /** Escape while nothing runs (and no list is open): true when it undid something (Edit & resend's editing). */
  cancel?(): boolean;
}

export class ChatInput {
  readonly element: HTMLElement;
  readonly textarea: HTMLTextAreaElement;
  private readonly mirror: HTMLElement;
  private readonly list: HTMLElement;
  private matches: CommandInfo[] = [];
  private selected = 0;
  private context: CompletionContext | null = null;
  private mentionMatches: (MentionRef & { description?: string })[] = [];
  private mention: MentionContext | null = null;
  private readonly chipRow: HTMLElement;
  /** What the user attached with `@`, sent with the next line. */
  mentions: MentionRef[] = [];
  private readonly tray = new ImageTray(() => this.textarea.focus());

  constructor(private readonly callbacks: InputCallbacks, draft: string) {
    this.textarea = h('textarea', {
      id: 'chat-input', 'data-testid': 'chat-input', rows: '1', spellcheck: 'true',
      placeholder: 'Ask Sunwell, or type ::help', 'aria-label': 'Chat input',
      'aria-autocomplete': 'list', 'aria-controls': 'command-completions',
    }) as HTMLTextAreaElement;
    this.mirror = h('div', { className: 'input-mirror', 'aria-hidden': 'true', 'data-testid': 'input-highlight' });
    this.list = h('div', { id: 'command-completions', className: 'completions', role: 'listbox', hidden: true,
      'data-testid': 'command-completions' });
    this.chipRow = h('div', { className: 'mention-chips', 'data-testid': 'mention-chips', hidden: true });
    this.element = h('div', { className: 'input-area' }, this.tray.element, this.chipRow,
      h('div', { className: 'input-wrap' }, this.list, this.mirror, this.textarea));
    this.chipRow.addEventListener('click', (e) => {
      const remove = (e.target as HTMLElement).closest<HTMLElement>('[data-remove]');
      if (!remove) return;
      this.mentions.splice(Number(remove.dataset.remove), 1);
      this.drawChips();
      this.textarea.focus();
    });
    this.textarea.addEventListener('paste', (e) => this.onPaste(e));
    this.element.addEventListener('dragover', (e) => {
      if (e.dataTransfer?.types.includes('Files')) e.preventDefault();
    });
    this.element.addEventListener('drop', (e) => {
      const files = [...(e.dataTransfer?.files ?? [])];
      if (!files.length) return;
      e.preventDefault();
      void this.tray.add(files);
    });
    this.textarea.value = draft;
    this.textarea.addEventListener('input', () => this.onInput());
    this.textarea.addEventListener('keydown', (e) => this.onKeyDown(e));
    this.textarea.addEventListener('scroll', () => (this.mirror.scrollTop = this.textarea.scrollTop));
    this.textarea.addEventListener('blur', () => setTimeout(() => this.closeCompletions(), 150));
    this.list.addEventListener('mousedown', (e) => {
      const option = (e.target as HTMLElement).closest<HTMLElement>('[data-index]');
      if (!option) return;
      e.preventDefault();
      if (this.mention) this.acceptMention(Number(option.dataset.index));
      else this.accept(Number(option.dataset.index));
    });
    this.refresh();
  }

  /** The files came (or changed): an open `@` list shows them. */
  filesChanged(): void {
    if (this.mention) this.updateCompletions();
  }

  get value(): string {
    return this.textarea.value;
  }

  set value(text: string) {
    this.textarea.value = text;
    this.refresh();
    this.callbacks.changed(text);
  }

  focus(): void {
    this.textarea.focus();
  }

  private onInput(): void {
    this.refresh();
    this.updateCompletions();
    this.callbacks.changed(this.textarea.value);
  }

  /** Arrows, Tab/Enter and Escape on the open list (of mentions or of commands); true when the key was the list's. */
  private popupKey(e: KeyboardEvent, popup: { count: number; accept: (i: number) => void; typedOut: boolean }): boolean {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      const step = e.key === 'ArrowDown' ? 1 : -1;
      this.selected = (this.selected + step + popup.count) % popup.count;
      this.drawCompletions();
      return true;
    }
    if (popup.typedOut) {
      this.closeCompletions();
      return false; // the Enter sends the line
    }
    if (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey)) {
      e.preventDefault();
      popup.accept(this.selected);
      return true;
    }
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      this.closeCompletions();
      return true;
    }
    return false;
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (e.isComposing || e.keyCode === 229) return;
    const popup = this.list.hidden ? null
      : this.mention && this.mentionMatches.length
        ? { count: this.mentionMatches.length, accept: (i: number) => this.acceptMention(i), typedOut: false }
        : this.matches.length
          ? { count: this.matches.length, accept: (i: number) => this.accept(i),
              // Enter on a command typed out in full sends it (the list would only add a space); Tab completes.
              typedOut: e.key === 'Enter' && this.context !== null && isCompleteCommand(this.matches, this.context.prefix) }
          : null;
    if (popup && this.popupKey(e, popup)) return;
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      const text = this.textarea.value;
      if (!text.trim() || this.callbacks.busy()) return;
      this.callbacks.send(text, this.mentions, this.images);
      this.clear();
      return;
    }
    if (e.key === 'Escape' && this.callbacks.busy()) {
      e.preventDefault();
      this.callbacks.stop();
    } else if (e.key === 'Escape' && this.callbacks.cancel?.()) {
      e.preventDefault();
      e.stopPropagation();
    }
  }

  /** Redraws the highlighting mirror and fits the height to the text. */
  private refresh(): void {
    const text = this.textarea.value;
    this.mirror.replaceChildren(
      ...segments(text).map((s) => (s.command ? h('mark', { className: 'command-token', 'data-testid': 'command-token' }, s.text) : document.createTextNode(s.text))),
      // a trailing newline in a textarea takes a line; the mirror needs something to take it too
      document.createTextNode(text.endsWith('\n') ? ' ' : ''),
    );
    this.textarea.style.height = 'auto';
    this.textarea.style.height = `${Math.min(this.textarea.scrollHeight, 240)}px`;
    this.mirror.scrollTop = this.textarea.scrollTop;
  }

  /** The chips of the next line (Edit & resend puts back the ones the line had). */
  setMentions(mentions: readonly MentionRef[]): void {
    this.mentions = [...mentions];
    this.drawChips();
  }

  /** The pasted and dropped images of the next line. */
  get images(): ImageUpload[] {
    return this.tray.images;
  }

  setImages(images: readonly ImageUpload[]): void {
    this.tray.set(images);
  }

  /** Files on the clipboard become images (a wrong type is a note); text pasted with them still goes in. */
  private onPaste(e: ClipboardEvent): void {
    const files = [...(e.clipboardData?.items ?? [])].filter((item) => item.kind === 'file')
      .map((item) => item.getAsFile()).filter((file): file is File => file !== null);
    if (!files.length) return;
    if (!e.clipboardData?.types.includes('text/plain')) e.preventDefault();
    void this.tray.add(files);
  }

  /** After a send: no text, no chips. */
  clear(): void {
    this.tray.set([]);
    this.mentions = [];
    this.drawChips();
    this.value = '';
  }

  private updateCompletions(): void {
    this.mention = mentionContext(this.textarea.value, this.textarea.selectionStart ?? 0);
    if (this.mention) {
      if (!this.callbacks.files().length) this.callbacks.needFiles();
      this.mentionMatches = matchMentions(this.mention.query, this.callbacks.files(), 30, this.callbacks.resources?.() ?? [])
        .filter((m) => !this.mentions.some((c) => c.label === m.label));
      this.context = null;
      this.matches = [];
      this.selected = 0;
      this.drawCompletions();
      return;
    }
    this.mentionMatches = [];
    this.context = completionContext(this.textarea.value, this.textarea.selectionStart ?? 0);
    this.matches = this.context ? matchCommands(this.callbacks.commands(), this.context.prefix) : [];
    this.selected = 0;
    this.drawCompletions();
  }

  private drawCompletions(): void {
    if (this.mention) {
      if (!this.mentionMatches.length) {
        this.list.hidden = true;
        return;
      }
      this.list.hidden = false;
      this.list.replaceChildren(...this.mentionMatches.map((m, i) => h('div', {
        className: `completion mention-option${i === this.selected ? ' selected' : ''}`, role: 'option', 'data-index': String(i),
        'aria-selected': i === this.selected ? 'true' : 'false', 'data-testid': 'mention-option', 'data-label': m.label,
      }, icon(m.kind === 'file' ? (isImageName(m.label) ? 'file-media' : 'file') : m.kind === 'selection' ? 'selection' : m.kind === 'problems' ? 'warning' : 'terminal'),
      h('span', { className: 'completion-name' }, m.label),
      h('span', { className: 'completion-description' }, m.description ?? ''))));
      this.list.querySelector('.selected')?.scrollIntoView({ block: 'nearest' });
      return;
    }
    if (!this.context || this.matches.length === 0) {
      this.closeCompletions();
      return;
    }
    this.list.hidden = false;
    this.list.replaceChildren(...this.matches.map((c, i) => h('div', {
      className: `completion${i === this.selected ? ' selected' : ''}`, role: 'option', 'data-index': String(i),
      'aria-selected': i === this.selected ? 'true' : 'false', 'data-testid': 'command-completion', 'data-name': c.name,
    }, h('span', { className: 'completion-name' }, `::${c.name.replace(/^::/, '')}`),
    h('span', { className: 'completion-usage' }, c.usage.replace(/^::\S+\s*/, '')),
    h('span', { className: 'completion-description' }, c.description))));
    this.list.querySelector('.selected')?.scrollIntoView({ block: 'nearest' });
  }

  private closeCompletions(): void {
    this.list.hidden = true;
    this.matches = [];
    this.context = null;
    this.mentionMatches = [];
    this.mention = null;
  }

  private acceptMention(index: number): void {
    const picked = this.mentionMatches[index];
    if (!picked || !this.mention) return;
    const { text, caret } = removeMentionQuery(this.textarea.value, this.mention);
    this.closeCompletions();
    // A resource keeps its server and URI: without them the engine cannot read it ("no MCP server None")
    this.mentions.push({ kind: picked.kind, label: picked.label, ...(picked.path ? { path: picked.path } : {}),
      ...(picked.server ? { server: picked.server, uri: picked.uri } : {}) });
    this.drawChips();
    this.value = text;
    this.textarea.setSelectionRange(caret, caret);
    this.textarea.focus();
  }

  private drawChips(): void {
    this.chipRow.hidden = this.mentions.length === 0;
    this.chipRow.replaceChildren(...this.mentions.map((m, i) => h('span', {
      className: 'mention-chip', 'data-testid': 'mention-chip', 'data-label': m.label, title: m.path ?? m.label,
    }, icon(m.kind === 'file' ? (isImageName(m.label) ? 'file-media' : 'file') : m.kind === 'selection' ? 'selection' : m.kind === 'problems' ? 'warning'
      : m.kind === 'resource' ? 'plug' : 'terminal'),
    h('span', {}, chipText(m.label)),
    h('button', { className: 'mention-remove', 'data-remove': String(i), 'data-testid': 'mention-remove', title: `Remove ${m.label}`,
      'aria-label': `Remove ${m.label}` }, icon('close')))));
  }

  private accept(index: number): void {
    const command = this.matches[index];
    if (!command || !this.context) return;
    const { text, caret } = applyCompletion(this.textarea.value, this.context, command);
    this.closeCompletions();
    this.value = text;
    this.textarea.setSelectionRange(caret, caret);
    this.textarea.focus();
  }
}

// The chat input: a textarea over a mirror that highlights `::commands` as they are typed, a completion list fed
// by `sunwell/commands`, Enter to send and Shift+Enter for a new line.
import { applyCompletion, completionContext, matchCommands, segments, type CompletionContext } from '../common/commandline';
import type { CommandInfo } from '../protocol';
import { h } from './dom';

export interface InputCallbacks {
  send(text: string): void;
  stop(): void;
  changed(text: string): void;
  commands(): CommandInfo[];
  busy(): boolean;
}

export class ChatInput {
  readonly element: HTMLElement;
  readonly textarea: HTMLTextAreaElement;
  private readonly mirror: HTMLElement;
  private readonly list: HTMLElement;
  private matches: CommandInfo[] = [];
  private selected = 0;
  private context: CompletionContext | null = null;

  constructor(private readonly callbacks: InputCallbacks, draft: string) {
    this.textarea = h('textarea', {
      id: 'chat-input', 'data-testid': 'chat-input', rows: '1', spellcheck: 'true',
      placeholder: 'Ask Sunwell, or type ::help', 'aria-label': 'Chat input',
      'aria-autocomplete': 'list', 'aria-controls': 'command-completions',
    }) as HTMLTextAreaElement;
    this.mirror = h('div', { className: 'input-mirror', 'aria-hidden': 'true', 'data-testid': 'input-highlight' });
    this.list = h('div', { id: 'command-completions', className: 'completions', role: 'listbox', hidden: true,
      'data-testid': 'command-completions' });
    this.element = h('div', { className: 'input-wrap' }, this.list, this.mirror, this.textarea);
    this.textarea.value = draft;
    this.textarea.addEventListener('input', () => this.onInput());
    this.textarea.addEventListener('keydown', (e) => this.onKeyDown(e));
    this.textarea.addEventListener('scroll', () => (this.mirror.scrollTop = this.textarea.scrollTop));
    this.textarea.addEventListener('blur', () => setTimeout(() => this.closeCompletions(), 150));
    this.list.addEventListener('mousedown', (e) => {
      const option = (e.target as HTMLElement).closest<HTMLElement>('[data-index]');
      if (!option) return;
      e.preventDefault();
      this.accept(Number(option.dataset.index));
    });
    this.refresh();
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

  private onKeyDown(e: KeyboardEvent): void {
    if (e.isComposing || e.keyCode === 229) return;
    if (!this.list.hidden && this.matches.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const step = e.key === 'ArrowDown' ? 1 : -1;
        this.selected = (this.selected + step + this.matches.length) % this.matches.length;
        this.drawCompletions();
        return;
      }
      if (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey)) {
        e.preventDefault();
        this.accept(this.selected);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        this.closeCompletions();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      const text = this.textarea.value;
      if (!text.trim() || this.callbacks.busy()) return;
      this.callbacks.send(text);
      this.value = '';
      return;
    }
    if (e.key === 'Escape' && this.callbacks.busy()) {
      e.preventDefault();
      this.callbacks.stop();
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

  private updateCompletions(): void {
    this.context = completionContext(this.textarea.value, this.textarea.selectionStart ?? 0);
    this.matches = this.context ? matchCommands(this.callbacks.commands(), this.context.prefix) : [];
    this.selected = 0;
    this.drawCompletions();
  }

  private drawCompletions(): void {
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

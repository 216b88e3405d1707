// The sidecar's requests to the person during a turn of the open chat: approvals (`sunwell/approve`) and
// `ask_user`'s questions (`sunwell/ask`). Each becomes a card in the transcript and waits in its broker
// (common/requestBroker.ts) for an answer; when the view is hidden it comes forward, with a notification too.
import * as vscode from 'vscode';
import type { ChatViewPort } from './chatController';
import type { ApprovalBroker } from './common/approvals';
import { QuestionBroker } from './common/questions';
import type { ChatAction } from './common/state';
import type { ApprovalRequest, ApproveResult, AskParams, AskResult } from './protocol';

export interface ChatRequestHost {
  /** Where a request of `session` goes: a card of the open chat (it listens to a turn of that session), a worktree
   *  session's turn running in the background (it waits for the person, who is told), or refused (a turn the chat
   *  left and stopped). */
  route(session: string): 'card' | 'background' | 'refuse';
  /** The worktree session running `session` in the background. */
  worktreeOf(session: string): string | undefined;
  dispatch(action: ChatAction): void;
  /** The chat's view, while one is open. */
  view(): ChatViewPort | undefined;
}

export class ChatRequests implements vscode.Disposable {
  /** `ask_user`'s questions waiting for the person. */
  readonly questions = new QuestionBroker();
  private readonly disposables: { dispose(): void }[];

  constructor(readonly approvals: ApprovalBroker, private readonly host: ChatRequestHost) {
    this.disposables = [
      approvals.onDidChange((change) => {
        if (change.type === 'answered') host.dispatch({ type: 'approvalAnswered', callId: change.id, decision: change.answer });
        if (change.type === 'expired') host.dispatch({ type: 'approvalExpired', callId: change.id });
        void vscode.commands.executeCommand('setContext', 'sunwell.pendingApproval', approvals.pendingParams().length > 0);
      }),
      this.questions.onDidChange((change) => {
        if (change.type === 'answered') host.dispatch({ type: 'questionAnswered', callId: change.id, answer: change.answer });
        if (change.type === 'expired') host.dispatch({ type: 'questionExpired', callId: change.id });
      }),
    ];
  }

  async approve(params: ApprovalRequest, token: vscode.CancellationToken): Promise<ApproveResult> {
    const route = this.host.route(params.session);
    // A turn this chat left, or of another session: no card to put it on, and that turn is being stopped anyway.
    if (route === 'refuse') return { decision: 'deny' };
    if (route === 'background') return this.approveInBackground(params, token);
    // The card first: a request the sidecar already gave up on then expires it at once.
    this.host.dispatch({ type: 'approvalRequested', params });
    const pending = this.approvals.request(params, token);
    const view = this.host.view();
    if (!view?.visible) {
      // Never lost: the card waits in the transcript, the view comes forward, and the question can be answered
      // from the notification too.
      if (view) await view.reveal().catch(() => undefined);
      else await vscode.commands.executeCommand('sunwell.chatView.focus');
      void this.notify(params);
    }
    const decision = await pending;
    const note = this.approvals.takeNote(params.callId);
    return note ? { decision, note } : { decision };
  }

  /** A worktree session's approval while the chat shows another: it waits in the broker (no other turn waits
   *  for it), the person is told which session asks, and Continue on that session shows it as a card. */
  private async approveInBackground(params: ApprovalRequest, token: vscode.CancellationToken): Promise<ApproveResult> {
    const pending = this.approvals.request(params, token);
    void this.notify(params, this.host.worktreeOf(params.session));
    const decision = await pending;
    const note = this.approvals.takeNote(params.callId);
    return note ? { decision, note } : { decision };
  }

  async ask(params: AskParams, token: vscode.CancellationToken): Promise<AskResult> {
    if (this.host.route(params.session) !== 'card') return { answer: null };
    this.host.dispatch({ type: 'questionRequested', params });
    const pending = this.questions.request(params, token);
    const view = this.host.view();
    if (!view?.visible) {
      if (view) await view.reveal().catch(() => undefined);
      else await vscode.commands.executeCommand('sunwell.chatView.focus');
      void vscode.window.showInformationMessage(`Sunwell asks: ${params.question}`, 'Show in Chat')
        .then((choice) => choice && vscode.commands.executeCommand('sunwell.openChat'));
    }
    return { answer: await pending };
  }

  /** The sidecar is gone: nobody waits for these answers any more. */
  expireAll(): void {
    this.approvals.expireAll();
    this.questions.expireAll();
  }

  private async notify(params: ApprovalRequest, worktree?: string): Promise<void> {
    const preview = params.preview;
    const target = preview.kind === 'diff' ? `write ${preview.path}`
      : preview.kind === 'command' ? `run \`${preview.command}\``
      : preview.kind === 'effects' ? `keep what \`${preview.command}\` changed (${preview.changes.length} file${preview.changes.length === 1 ? '' : 's'})`
      : `use ${params.name}`;
    const choices = preview.kind === 'diff' ? ['Allow', 'Deny', 'Show Diff'] : ['Allow', 'Deny', worktree ? 'Show Session' : 'Show in Chat'];
    const who = worktree ? `Sunwell (worktree session ${worktree})` : 'Sunwell';
    const schema = preview.kind === 'diff' && preview.remoteSchema
      ? ` It names a remote schema, ${preview.remoteSchema}: VS Code will fetch it when the file is opened.` : '';
    const choice = await vscode.window.showInformationMessage(`${who} wants to ${target}.${schema}`, ...choices);
    if (choice === 'Allow') this.approvals.answer(params.callId, 'allow');
    else if (choice === 'Deny') this.approvals.answer(params.callId, 'deny');
    else if (choice === 'Show Diff') void vscode.commands.executeCommand('sunwell.approval.showDiff', params.callId);
    else if (choice === 'Show in Chat') void vscode.commands.executeCommand('sunwell.openChat');
    else if (choice === 'Show Session') void vscode.commands.executeCommand('sunwell.continueWorktree', worktree);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

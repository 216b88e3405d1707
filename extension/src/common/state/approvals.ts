// The sidecar's requests to the person on a tool's card: an approval (`sunwell/approve`) or `ask_user`'s question
// (`sunwell/ask`), requested, answered or given up on.
import { appendTool, assertNever, findTool, pretty, replaceItem, unanswered } from './items';
import type { ApprovalCard, ChatState, LocalAction, QuestionCard, ToolItem } from './model';

type RequestAction = Extract<LocalAction, { type: 'approvalRequested' | 'approvalAnswered' | 'approvalExpired' | 'questionRequested'
  | 'questionAnswered' | 'questionExpired' }>;

export function reduceRequest(state: ChatState, action: RequestAction): ChatState {
  switch (action.type) {
    case 'approvalRequested': {
      const p = action.params;
      if (!state.turn || (state.session && p.session && p.session !== state.session)) return state;
      const card: ApprovalCard = { risk: p.risk, preview: p.preview, state: 'pending', decision: null, by: null };
      const existing = findTool(state, p.callId);
      if (existing) return replaceItem(state, existing, { ...existing, approval: card, arguments: p.arguments });
      return appendTool(state, p.callId, p.turn, p.name, { arguments: p.arguments, status: 'running', approval: card,
        argsText: pretty(p.arguments) });
    }
    case 'approvalAnswered':
    case 'approvalExpired': {
      const tool = findTool(state, action.callId);
      if (!tool?.approval || tool.approval.state !== 'pending') return state;
      const approval: ApprovalCard = action.type === 'approvalAnswered'
        ? { ...tool.approval, state: 'answered', decision: action.decision, by: 'user' }
        : { ...tool.approval, state: unanswered(state), decision: 'deny', by: 'policy' };
      return replaceItem(state, tool, { ...tool, approval });
    }
    case 'questionRequested': {
      const p = action.params;
      if (!state.turn || (state.session && p.session && p.session !== state.session)) return state;
      const question: QuestionCard = { question: p.question, options: p.options ?? [], state: 'pending', answer: null };
      const existing = findTool(state, p.callId);
      if (existing) return replaceItem(state, existing, { ...existing, question });
      return appendTool(state, p.callId, p.turn, 'ask_user', { status: 'running', question,
        arguments: { question: p.question, options: p.options }, argsText: pretty({ question: p.question, options: p.options }) });
    }
    case 'questionAnswered':
    case 'questionExpired': {
      const tool = findTool(state, action.callId);
      if (!tool?.question || tool.question.state !== 'pending') return state;
      const question: QuestionCard = action.type === 'questionAnswered'
        ? { ...tool.question, state: 'answered', answer: action.answer }
        : { ...tool.question, state: unanswered(state) };
      return replaceItem(state, tool, { ...tool, question });
    }
    default:
      return assertNever(action);
  }
}

export function pendingApprovals(state: ChatState): ToolItem[] {
  return state.items.filter((i): i is ToolItem => i.kind === 'tool' && i.approval?.state === 'pending');
}

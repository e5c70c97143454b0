// The open tasks' views, one per task id, shared by every stream that carries news of a task
// (the page's follow stream, a send's stream, a re-read), so each folds into the same view and
// React re-renders whoever shows it. The folding itself is fold.ts; this only holds the result.
import { emptyView, type TaskView } from "./fold";

type Listener = () => void;

export class Views {
  private readonly views = new Map<string, TaskView>();
  private readonly listeners = new Set<Listener>();

  constructor(private readonly me: string) {}

  get(taskId: string): TaskView {
    let view = this.views.get(taskId);
    if (!view) {
      view = emptyView(taskId, this.me);
      this.views.set(taskId, view);
    }
    return view;
  }

  /** Fold something into a task's view; listeners hear of it when the view changed. */
  apply(taskId: string, fold: (view: TaskView) => TaskView): TaskView {
    const before = this.get(taskId);
    const after = fold(before);
    if (after !== before) {
      this.views.set(taskId, after);
      for (const listener of this.listeners) listener();
    }
    return after;
  }

  subscribe = (listener: Listener): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
}

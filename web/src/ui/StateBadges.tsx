// A task's state badge, its sub-state badge when it has one, for a question put to a person
// (a participant task) a badge saying so ("question for you", or whom it asks), and for calls
// that wait for approval one saying whose ("approval for you", or "awaits approval").
import { shortState, type StateName } from "../wire";

export function StateBadges({
  state,
  subState,
  question = null,
  approval = null,
}: {
  state: StateName;
  subState: string | null;
  question?: string | null;
  approval?: string | null;
}) {
  const short = shortState(state);
  return (
    <span className="badges">
      {question ? <span className="badge question">{question}</span> : null}
      {approval ? (
        <span className={`badge approval${approval === "approval for you" ? "" : " others"}`}>{approval}</span>
      ) : null}
      <span className={`badge state-${short.toLowerCase().replace(/_/g, "-")}`}>
        <span className="visually-hidden">state </span>
        {short}
      </span>
      {subState ? (
        <span className="badge substate">
          <span className="visually-hidden">sub-state </span>
          {subState}
        </span>
      ) : null}
    </span>
  );
}

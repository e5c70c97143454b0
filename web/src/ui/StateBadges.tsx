// A task's state badge, and its sub-state badge when it has one.
import { shortState, type StateName } from "../wire";

export function StateBadges({ state, subState }: { state: StateName; subState: string | null }) {
  const short = shortState(state);
  return (
    <span className="badges">
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

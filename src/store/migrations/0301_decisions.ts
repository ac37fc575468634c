// `decisions` is created by 0200_policy (the policy lifecycle replays it); this step once created
// it too, for the order in which the two capabilities landed. Kept, empty, so databases that
// recorded it still migrate.
export async function up(): Promise<void> {}

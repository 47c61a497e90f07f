-- When the owners were told that the trial ends in 3 days (the trial_ending alert), so the
-- billing tick tells them once; an operator's trial grant that moves the end clears it.
ALTER TABLE billing_accounts ADD COLUMN trial_warned_at BIGINT;

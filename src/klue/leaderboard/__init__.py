"""The hosted leaderboard (`klue leaderboard`): a Django application over klue's judge and statistics.

Participants send prediction files; the site scores them against gold they never see, on a public part
(shown, with 95% intervals and significance groups) and a private part (shown after `reveal`), with
quotas that count every attempt. docs/leaderboard.md is the guide. Django is imported only inside this
package's modules that need it (the `klue[leaderboard]` extra).
"""

#!/bin/sh
# usage: lat-msgs.sh BASE_URL [ACCOUNT] — msgs-filtered tx lists: median of 15 sequential requests per URL (after 2 warm-ups), ms
A=${2:-init1lradzgeuhkj8xy6zpj8y66qchmlkacjhl68n2f}
X=cosmwasm.wasm.v1.MsgExecuteContract; S=cosmos.bank.v1beta1.MsgSend
for p in "/indexer/tx/v1/txs/by_account/$A?msgs=$S&pagination.limit=10" \
         "/indexer/tx/v1/txs/by_account/$A?msgs=$S&is_signer=true&pagination.limit=10" \
         "/indexer/tx/v1/txs/by_account/$A?msgs=$X,$S&pagination.limit=10" \
         "/indexer/tx/v1/txs?msgs=$X,$S&pagination.limit=10" \
         "/indexer/tx/v1/txs/by_account/$A?msgs=$S&pagination.limit=10&pagination.count_total=false"; do
  for i in 1 2; do curl -s -o /dev/null "$1$p"; done
  t=$(for i in $(seq 15); do curl -s -o /dev/null -w '%{time_total}\n' "$1$p"; done | sort -n | sed -n 8p)
  tot=$(curl -s "$1$p" | grep -o '"total":"[0-9]*"')
  echo "$(echo "$t*1000" | bc) ms $tot $p"
done

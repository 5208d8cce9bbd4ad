import torch
import torch.nn as nn

import gradwalk  # gradwalk.log puts your own numbers in the Charts tab (a no-op elsewhere)

torch.manual_seed(0)
# Points in the plane; the class says whether a point lies inside the unit circle.
X = torch.randn(512, 2)
Y = (X.pow(2).sum(dim=1) < 1.0).long()
X_train, Y_train, X_val, Y_val = X[:384], Y[:384], X[384:], Y[384:]

model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
schedule = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)  # halve lr every 10 epochs
loss_fn = nn.CrossEntropyLoss()

for epoch in range(30):
    model.train()
    for i in range(0, 384, 64):
        loss = loss_fn(model(X_train[i:i + 64]), Y_train[i:i + 64])
        opt.zero_grad()
        loss.backward()
        opt.step()
    schedule.step()

    model.eval()
    with torch.no_grad():
        val_acc = (model(X_val).argmax(dim=1) == Y_val).float().mean().item()
    gradwalk.log("val_acc", val_acc, step=epoch)

print(f"validation accuracy after 30 epochs: {val_acc:.3f}")
